"""Rich tables as GitHub-flavoured Markdown, so a CI summary shows what the terminal shows."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text


def _plain(cell: object) -> str:
    if isinstance(cell, Text):
        text = cell.plain
    elif isinstance(cell, str):
        text = Text.from_markup(cell).plain
    else:
        text = str(cell)
    return text.replace("|", "\\|").replace("\n", " ")


def table_to_markdown(table: Table) -> str:
    """The same title, headers and cells as ``table``, as a Markdown table."""
    headers = [_plain(column.header) for column in table.columns]
    align = ["---:" if column.justify == "right" else "---" for column in table.columns]
    columns = [[_plain(cell) for cell in column.cells] for column in table.columns]
    lines = []
    if table.title:
        lines += [f"**{_plain(table.title)}**", ""]
    lines.append("| " + " | ".join(headers) + " |")
    lines.append("| " + " | ".join(align) + " |")
    for row in zip(*columns, strict=True):
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"
