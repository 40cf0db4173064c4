"""How wide a text is drawn in the app's tables: the width of every printable ASCII character in the tables'
font at 14 px (Streamlit's "Source Sans", measured once with canvas ``measureText`` in Chromium 156 at a 1,400-pixel
window; a character outside the table counts as the widest), so a column can be made as wide as its longest text,
no wider. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

_CHARACTERS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ "
_WIDTHS_14PX = (
    6.96,
    6.96,
    6.96,
    6.96,
    6.96,
    6.96,
    6.96,
    6.96,
    6.96,
    6.96,
    7.06,
    7.74,
    6.38,
    7.77,
    6.94,
    4.09,
    7.06,
    7.62,
    3.44,
    3.46,
    6.93,
    3.57,
    11.61,
    7.66,
    7.59,
    7.77,
    7.77,
    4.86,
    5.87,
    4.73,
    7.62,
    6.54,
    10.07,
    6.24,
    6.54,
    5.95,
    7.6,
    8.23,
    7.99,
    8.61,
    7.38,
    6.92,
    8.64,
    9.13,
    3.68,
    6.71,
    8.11,
    6.8,
    10.18,
    9.06,
    9.3,
    7.92,
    9.3,
    7.97,
    7.48,
    7.5,
    9.03,
    7.21,
    11,
    7.18,
    6.66,
    7.55,
    4.05,
    5.96,
    6.96,
    6.96,
    11.54,
    8.53,
    3.49,
    4.24,
    4.24,
    5.85,
    6.96,
    3.49,
    4.35,
    3.49,
    4.9,
    3.49,
    3.49,
    6.96,
    6.96,
    6.96,
    5.95,
    11.86,
    4.24,
    4.9,
    4.24,
    6.96,
    7,
    7.59,
    4.24,
    3.37,
    4.24,
    6.96,
    2.8,
)
WIDTH_14PX = dict(zip(_CHARACTERS, _WIDTHS_14PX, strict=True))
WIDEST_14PX = max(_WIDTHS_14PX)
CELL_PADDING_PX = 18  # the grid's 8 px either side of a cell's text, and 2 px of rounding


def text_px(text: str, size: float = 14.0) -> float:
    """The drawn width of ``text`` at ``size`` pixels, in pixels."""
    return sum(WIDTH_14PX.get(character, WIDEST_14PX) for character in str(text)) * size / 14.0


def column_px(texts: Iterable[str], extra: int = 0) -> int:
    """A column as wide as its widest text (a head or a cell) with its padding, and ``extra`` (an icon)."""
    return int(max((text_px(text) for text in texts), default=0.0) + CELL_PADDING_PX + extra + 0.999)


def option_width(names: Sequence[str]) -> int:
    """Pixels for the app's option column: its widest name whole in the table's font, with the cell's padding,
    between 120 and 360."""
    return min(360, max(120, column_px(["option", *names])))
