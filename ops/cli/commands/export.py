"""`ledger export`: the regulator exports, each on the seam of `projections/regulator.py`
(`dgoj`: Spain's monitoring batch, ops/cli/commands/_export_dgoj.py; `ksa`: the
Netherlands' control database, ops/cli/commands/_export_ksa.py), and `verify`: a
directory of exported batches checked offline."""
from __future__ import annotations

import argparse

from ops.cli.commands import _export_dgoj, _export_ksa
from ops.cli.options import add_command


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "export", "regulator exports (dgoj: Spain's monitoring batch v3.3; ksa: the Netherlands' control database v1.11; verify: KSA batches)")
    esub = p.add_subparsers(dest="export_format", metavar="FORMAT")
    _export_dgoj.add(esub)
    _export_ksa.add(esub)
