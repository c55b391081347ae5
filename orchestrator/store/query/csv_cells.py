"""CSV cells that a spreadsheet shows as text: no formula injection from names stored by a user.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and some read a leading tab or carriage
return the same way) as a formula: an implementation named ``=cmd|' /C calc'!A0`` exported to CSV would run when
the file is opened.  :func:`csv_cell` puts a ``'`` before such text, which spreadsheets show as the text itself;
numbers, and text that is a plain number (``-1.5``, ``+3.2%``), are left as they are.  Every CSV the project writes
(``export --format csv``, the dashboard's CSV downloads and ``dashboard build``'s CSV links) passes its cells
through it.
"""

from __future__ import annotations

import re
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?%?")


def csv_cell(value: Any) -> Any:
    """``value`` as a CSV cell: text a spreadsheet would run as a formula gets a leading ``'``."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value
