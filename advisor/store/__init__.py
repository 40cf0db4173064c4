"""The store layer: profile files read safely, folders with their persistent index, writes that lose nothing, the
published collections and the GPU catalog.

Modules: :mod:`~advisor.store.parse` (safe YAML and one profile from bytes), :mod:`~advisor.store.folder` (files,
folders, the cache and the folder's rows), :mod:`~advisor.store.write` (slugs, atomic writes, add),
:mod:`~advisor.store.index` (the folder's SQLite index), :mod:`~advisor.store.collection` (published collections),
:mod:`~advisor.store.catalog` (the GPU catalog) and :mod:`~advisor.store.widths` (the cross-validated ranges).
The names below are the layer's public API (``store.load_profiles``), each defined once in its module.
"""

from advisor.store.folder import (
    FileEntry,
    FolderWatch,
    ProfileCache,
    RowSet,
    file_key,
    folder_signature,
    keep_snapshot,
    load_file,
    load_profile,
    load_profiles,
    load_rows,
    profile_files,
    read_file_bytes,
    read_snapshot,
)
from advisor.store.parse import (
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_NODES,
    MAX_SLUG_LENGTH,
    PROFILE_SUFFIXES,
    Profile,
    ProfileSet,
    parse_yaml,
    profile_from_bytes,
    profile_from_data,
)
from advisor.store.write import (
    AddReport,
    add_profiles,
    as_upload,
    check_writable_folder,
    dump_profile,
    slugify,
    submit_hint,
    unique_slug,
    write_atomic,
    write_profile,
)

__all__ = [
    "MAX_DEPTH", "MAX_FILE_BYTES", "MAX_NODES", "MAX_SLUG_LENGTH", "PROFILE_SUFFIXES", "AddReport", "FileEntry",
    "FolderWatch", "Profile", "ProfileCache", "ProfileSet", "RowSet", "add_profiles", "as_upload",
    "check_writable_folder", "dump_profile", "file_key", "folder_signature", "keep_snapshot", "load_file",
    "load_profile", "load_profiles", "load_rows", "parse_yaml", "profile_files", "profile_from_bytes",
    "profile_from_data", "read_file_bytes", "read_snapshot", "slugify", "submit_hint", "unique_slug", "write_atomic",
    "write_profile",
]  # fmt: skip
