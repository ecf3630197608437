"""`python -m ops.cli`: the same as `ledger`."""
import sys

from ops.cli import main

sys.exit(main())
