"""Small file trees carried inside a command's arguments instead of an archive upload.

On Docker 20.10 every ``put_archive`` re-executes a tar helper in the daemon (~80 ms, measured in
bench/RESULTS.md), while the verifier's exec is paid anyway. A task's ``tests/`` is usually a
few KB (``test.sh`` plus a pytest file), so it travels as arguments of the verifier exec and the
wrapper writes it with POSIX ``printf '%b'`` — no tar, base64 or python needed in the image.

Encoding: printable ASCII, newline and tab are sent as they are; every other byte, and the
backslash itself, as ``\\0ooo`` (the octal escape ``%b`` understands in dash, bash and busybox).
A tree is inlined only when it holds nothing but directories and regular files and fits well
under Linux's per-argument limit (128 KiB) and the exec's total argument budget; anything else
(a symlink, a big fixture) returns ``None`` and the caller uploads an archive as before.
"""

from __future__ import annotations

from pathlib import Path

from tasks_lib.container.archives import script_bytes

#: encoded size limits, kept far below MAX_ARG_STRLEN (128 KiB) and ARG_MAX (2 MiB here)
MAX_FILE_CHARS = 96 * 1024
MAX_TOTAL_CHARS = 256 * 1024

_LITERAL = frozenset(range(0x20, 0x7F)) - {ord("\\")} | {ord("\n"), ord("\t")}
_TABLE = [chr(b) if b in _LITERAL else f"\\0{b:03o}" for b in range(256)]


def encode(data: bytes) -> str:
    """``data`` as an argument that ``printf '%b'`` turns back into exactly these bytes."""
    return "".join(_TABLE[b] for b in data)


def inline_tree(source: Path, normalise_crlf: bool = False) -> list[str] | None:
    """Arguments ``kind path mode content`` (4 per entry, paths relative to ``source``) for the
    verifier wrapper, or ``None`` when the tree must go as an archive."""
    args: list[str] = []
    total = 0
    for item in sorted(source.rglob("*")):
        if item.is_symlink() or not (item.is_dir() or item.is_file()):
            return None
        rel = item.relative_to(source).as_posix()
        st = item.stat()
        mode = f"{st.st_mode & 0o7777:o}"
        if item.is_dir():
            args += ["d", rel, mode, ""]
            continue
        if st.st_size > MAX_FILE_CHARS:
            return None
        data = item.read_bytes()
        if normalise_crlf:
            data = script_bytes(item, data)
        text = encode(data)
        total += len(text) + len(rel)
        if len(text) > MAX_FILE_CHARS or total > MAX_TOTAL_CHARS:
            return None
        args += ["f", rel, mode, text]
    return args
