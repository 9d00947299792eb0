"""Language names for documents.

Role: map file extensions and free-form language labels (The Stack's
``lang`` column says ``"Python"``, ``"C++"``, ``"C#"``) to one canonical,
lower-case name per language.

Contract: :func:`language_from_path` and :func:`normalize_language` are pure
and total: an unknown extension gives :data:`UNKNOWN`, an unknown label is
lower-cased and stripped of spaces. Canonical names are lower-case ASCII
without spaces (``"python"``, ``"cpp"``, ``"csharp"``, ``"javascript"``).
"""

from __future__ import annotations

from pathlib import PurePath

__all__ = [
    "EXTENSIONS",
    "UNKNOWN",
    "known_source_suffixes",
    "language_from_path",
    "normalize_language",
]

UNKNOWN = "unknown"
"""The language of a document whose extension or label says nothing useful."""

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".scala": "scala",
    ".go": "go",
    ".rs": "rust",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".m": "objective-c",
    ".sh": "shell",
    ".bash": "shell",
    ".sql": "sql",
    ".lua": "lua",
    ".pl": "perl",
    ".pm": "perl",
    ".r": "r",
    ".jl": "julia",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".clj": "clojure",
    ".dart": "dart",
    ".md": "markdown",
    ".rst": "restructuredtext",
    ".txt": "text",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".html": "html",
    ".css": "css",
}
"""File suffix (lower-case, with the dot) to canonical language name."""

_ALIASES: dict[str, str] = {
    "c++": "cpp",
    "c#": "csharp",
    "c-sharp": "csharp",
    "f#": "fsharp",
    "objective-c++": "objective-cpp",
    "js": "javascript",
    "ts": "typescript",
    "py": "python",
    "python3": "python",
    "golang": "go",
    "bash": "shell",
    "sh": "shell",
    "jupyter notebook": "jupyter",
}


def normalize_language(label: str | None) -> str:
    """Return the canonical name for a language label.

    >>> normalize_language("C++"), normalize_language(" Python "), normalize_language(None)
    ('cpp', 'python', 'unknown')
    """
    if label is None:
        return UNKNOWN
    key = str(label).strip().lower()
    if not key:
        return UNKNOWN
    if key in _ALIASES:
        return _ALIASES[key]
    return key.replace(" ", "-")


def language_from_path(path: str | PurePath) -> str:
    """Return the canonical language of a file from its suffix, or :data:`UNKNOWN`.

    >>> language_from_path("json/decoder.py"), language_from_path("Makefile")
    ('python', 'unknown')
    """
    return EXTENSIONS.get(PurePath(path).suffix.lower(), UNKNOWN)


def known_source_suffixes(languages: tuple[str, ...] | None = None) -> frozenset[str]:
    """Return the suffixes of the given canonical languages (all known ones when ``None``)."""
    if languages is None:
        return frozenset(EXTENSIONS)
    wanted = {normalize_language(lang) for lang in languages}
    return frozenset(suffix for suffix, lang in EXTENSIONS.items() if lang in wanted)
