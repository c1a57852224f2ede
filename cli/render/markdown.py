"""Rich tables as GitHub-flavoured Markdown, so a CI summary shows what the terminal shows."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text


def plain_text(cell: object) -> str:
    """A rich cell without its markup, safe in a Markdown table (the HTML report uses it)."""
    if isinstance(cell, Text):
        text = cell.plain
    elif isinstance(cell, str):
        text = Text.from_markup(cell).plain
    else:
        text = str(cell)
    return text.replace("|", "\\|").replace("\n", " ")


def table_to_markdown(table: Table) -> str:
    """The same title, headers and cells as ``table``, as a Markdown table."""
    headers = [plain_text(column.header) for column in table.columns]
    align = ["---:" if column.justify == "right" else "---" for column in table.columns]
    columns = [[plain_text(cell) for cell in column.cells] for column in table.columns]
    lines = []
    if table.title:
        lines += [f"**{plain_text(table.title)}**", ""]
    lines.append("| " + " | ".join(headers) + " |")
    lines.append("| " + " | ".join(align) + " |")
    for row in zip(*columns, strict=True):
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"
