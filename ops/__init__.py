"""The programs on top of the ledger, one package per purpose (docs/architecture.md)."""


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("casino-ledger")
    except PackageNotFoundError:  # run from a checkout without installing
        return "unknown"
