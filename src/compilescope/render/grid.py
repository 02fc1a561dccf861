"""The one table layout of every command, and the two ways text is laid out.

On a terminal (rich wraps text at the screen's width) a :class:`Grid` is a boxed table when
its columns fit, its cells wrapped, and otherwise one record per block. Off a terminal — a
pipe, a CI log, a file — nothing is hard-wrapped (the console prints with ``soft_wrap``, so
its options say ``no_wrap``): a sentence, a guard's text or a path stays on one line for
``grep``, a Grid is a table only when every cell fits on its lines unwrapped, and otherwise
one record per line. This module formats :class:`rich.text.Text` cells; it never sees the
report model.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

WRAP_MIN = 16  # the narrowest a wrapping table column may get
SEPARATOR = " · "  # between a record's fields


def T(text: object, style: str = "") -> Text:
    """Plain text: never markup."""
    return Text("" if text is None else str(text), style=style)


def one_line(text: object) -> str:
    """``text`` (a path, a workload's name: data) on one line: each character that is not
    printable (a newline, a tab, an escape) written as Python writes it in a string, ``\\n``."""
    text = "" if text is None else str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class Indented:
    """``text`` indented by ``spaces``: on a terminal its wrapped lines hang at the indent;
    off one it is one line, the spaces before it."""

    def __init__(self, text: Text, spaces: int) -> None:
        self.text = text
        self.spaces = spaces

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.no_wrap:  # Padding crops a line to the width: never off a terminal
            yield Text.assemble(" " * self.spaces, self.text)
        else:
            yield Padding(self.text, (0, 0, 0, self.spaces), expand=False)


def indent(text: Text, spaces: int = 2) -> Indented:
    return Indented(text, spaces)


class Grid:
    """A table that never loses a value, whatever the width it is printed at (a terminal's,
    ``COLUMNS``, or the CLI's default off a terminal). Laid out as a table when it fits: each
    ``keep`` column (short figures: a time, a count, a verdict) on one line, every other column
    at least its longest word wide — the space left goes first to the ``keys`` columns' labels,
    then to the columns that would wrap most; otherwise one record per block: the record's name
    (its ``keys`` cells), then every non-empty ``column: value``, packed into lines of the width.
    No cell is cut short with "…", and no word is broken unless it is wider than the screen.

    Off a terminal (soft wrap) no cell is wrapped: a table when every cell fits unwrapped,
    otherwise one record per line, its name then its ``column: value`` fields.

    ``once`` columns are printed in the table only where their value changes from the row
    above (in records every record carries them)."""

    def __init__(self, title: Text | None, columns: Sequence[tuple[str, str]], *, keys: int = 1,
                 once: Sequence[int] = (), keep: Sequence[str] = ()) -> None:
        self.title = title
        self.columns = list(columns)
        self.keys = keys
        self.once = set(once)
        self.keep = set(keep)
        self.rows: list[tuple[list[Text], bool]] = []

    def add_row(self, *cells: Text, end_section: bool = False) -> None:
        assert len(cells) == len(self.columns), (len(cells), len(self.columns))
        self.rows.append((list(cells), end_section))

    def _extent(self, i: int) -> tuple[int, int, int]:
        """Column ``i``'s longest word (header included), its cells' longest line, and the
        longest line with the header's."""
        cells = [cells[i].plain for cells, _ in self.rows]
        header = self.columns[i][0]
        word = max((cell_len(w) for t in [header, *cells] for w in t.split()), default=1)
        line = max((cell_len(ln) for t in cells for ln in t.splitlines()), default=0)
        head = max((cell_len(ln) for ln in header.splitlines()), default=0)
        return max(word, 1), max(line, word), max(line, head, 1)

    def _border(self) -> int:
        return 3 * len(self.columns) + 1  # a border before each column and after the last, padding 1 + 1

    def natural(self) -> list[int]:
        """Each column's width with no cell wrapped."""
        return [self._extent(i)[2] for i in range(len(self.columns))]

    def widths(self, width: int) -> list[int] | None:
        """Each column's content width, ``width`` columns in all, or None when the ``keep``
        columns' lines and the other columns' longest words do not fit."""
        n = len(self.columns)
        extents = [self._extent(i) for i in range(n)]
        # a column that wraps keeps room for a few words a line: narrower, the records read better
        out = [line if name in self.keep else max(word, min(whole, WRAP_MIN))
               for (name, _), (word, line, whole) in zip(self.columns, extents)]
        full = [whole for _, _, whole in extents]
        room = width - self._border()
        if sum(out) > room:
            return None
        for i in range(min(self.keys, n)):  # the labels on one line, when they can be
            grow = min(full[i] - out[i], room - sum(out))
            out[i] += max(grow, 0)
        spare, want = room - sum(out), [max(h - w, 0) for w, h in zip(out, full)]
        if sum(want) <= spare:
            return full
        if spare > 0 and sum(want):
            out = [w + spare * x // sum(want) for w, x in zip(out, want)]
            for i in sorted(range(n), key=lambda i: full[i] - out[i], reverse=True)[:room - sum(out)]:
                out[i] += 1
        return out

    def unwrapped_widths(self, width: int) -> list[int] | None:
        """Each column's width when every cell fits ``width`` columns unwrapped, else None."""
        full = self.natural()
        return full if sum(full) + self._border() <= width else None

    def table(self, widths: Sequence[int] | None = None) -> Table:
        table = Table(title=self.title, title_justify="left")
        for i, (name, justify) in enumerate(self.columns):
            table.add_column(T(name), justify=justify, overflow="fold", no_wrap=False,  # type: ignore[arg-type]
                             width=None if widths is None else widths[i])
        previous: list[str] | None = None
        for cells, end_section in self.rows:
            shown = [T("") if i in self.once and previous is not None and previous[i] == c.plain else c
                     for i, c in enumerate(cells)]
            table.add_row(*shown, end_section=end_section)
            previous = None if end_section else [c.plain for c in cells]
        return table

    def _name(self, cells: list[Text]) -> Text:
        name = Text(SEPARATOR).join(c for c in cells[:self.keys] if c.plain) if self.keys else Text()
        name.stylize("bold")
        return name

    def _fields(self, cells: list[Text]) -> list[Text]:
        return [Text.assemble((head.replace("\n", " ") + ": ", "dim"), cell)
                for (head, _), cell in zip(self.columns[self.keys:], cells[self.keys:]) if cell.plain]

    def records(self, width: int) -> Iterator[RenderableType]:
        """One block per row: its name, then its ``column: value`` fields packed into lines of
        ``width`` (a field is broken only when it is longer than a line)."""
        if self.title is not None:
            yield self.title
        for cells, _ in self.rows:
            yield self._name(cells)
            lines: list[Text] = []
            for field in self._fields(cells):
                if lines and "\n" not in lines[-1].plain + field.plain \
                        and lines[-1].cell_len + 3 + field.cell_len <= width - 2:
                    lines[-1].append(SEPARATOR, "dim")
                    lines[-1].append_text(field)
                else:
                    lines.append(field.copy())
            for line in lines:
                yield Padding(line, (0, 0, 0, 2), expand=False)

    def lines(self) -> Iterator[Text]:
        """One line per row: its name, then its ``column: value`` fields (a cell's own lines
        joined by the separator), unwrapped."""
        if self.title is not None:
            yield self.title
        for cells, _ in self.rows:
            parts = [p for p in (self._name(cells), *self._fields(cells)) if p.plain]
            line = Text(SEPARATOR, "dim").join(parts)
            yield Text(SEPARATOR).join(line.split("\n")) if "\n" in line.plain else line

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.no_wrap:
            widths = self.unwrapped_widths(options.max_width)
            if widths is not None:
                yield self.table(widths)
            else:
                yield from self.lines()
            return
        widths = self.widths(options.max_width)
        if widths is not None:
            yield self.table(widths)
        else:
            yield from self.records(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widths = self.widths(options.max_width)
        if widths is None:
            return Measurement(options.max_width, options.max_width)
        natural = sum(self.natural()) + self._border()
        return Measurement(sum(widths) + self._border(), natural).with_maximum(options.max_width)


def to_text(parts: Sequence[RenderableType], width: int = 160, *, terminal: bool = False) -> str:
    """Rich renderables as plain text (no colour), for files and tests: as off a terminal
    (nothing hard-wrapped), or as on one ``width`` columns wide."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, soft_wrap=not terminal, color_system=None, force_terminal=False)
    for part in parts:
        console.print(part)
    return buf.getvalue()
