"""Command-line entry points: ``rltune`` (offline tools) and ``rltune-daemon`` (the service)."""
