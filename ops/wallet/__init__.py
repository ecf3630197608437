"""`ledger wallet`: payouts delivered to each operator's wallet, exactly once in effect (docs/wallet.md)."""
