"""Small shared helpers (hashing, atomic files, what uniret may replace, environment)."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "temporary_env": "envvars",
    "CHUNK": "files",
    "atomic_dir": "files",
    "atomic_open": "files",
    "atomic_write_json": "files",
    "atomic_write_text": "files",
    "hash_path": "files",
    "sha256_file": "files",
    "HeldLock": "locks",
    "LockHeld": "locks",
    "file_lock": "locks",
    "pid_alive": "locks",
    "NotOwnedError": "owned",
    "OWNER_STAMP": "owned",
    "check_output_folder": "owned",
    "check_replaceable": "owned",
    "written_by_uniret": "owned",
    "PLAIN_RULE": "names",
    "is_plain_name": "names",
    "excerpt": "text",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
