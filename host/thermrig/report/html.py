"""One self-contained HTML page: every figure embedded as a data URI, every table inline, and a list of
what is missing from the campaign's data. No script, no external resource: it opens offline anywhere."""

from __future__ import annotations

import base64
import html
from datetime import UTC, datetime
from pathlib import Path

from thermrig.report.tables import Table

STYLE = """
body { font-family: sans-serif; margin: 2em; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; }
th { background: #eee; }
img { max-width: 100%; border: 1px solid #ddd; margin: 0.5em 0; }
.missing { background: #fff4e0; border: 1px solid #e0a040; padding: 0.5em 1em; }
.note { color: #555; font-size: 0.85em; }
"""


def _table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in t.rows)
    empty = f'<tr><td colspan="{len(t.columns)}">no rows</td></tr>' if not t.rows else ""
    note = f'<p class="note">{html.escape(t.note)}</p>' if t.note else ""
    return (
        f'<h2>{html.escape(t.title)}</h2><table data-table="{t.name}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}{empty}</tbody></table>{note}"
        f'<p class="note">also as {t.name}.csv and {t.name}.json</p>'
    )


def _figure(title: str, png: Path) -> str:
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return f'<h2>{html.escape(title)}</h2><img alt="{html.escape(title)}" src="data:image/png;base64,{data}">'


def page(campaign: str, source: str, tables: list[Table], figures: list[tuple[str, Path]], missing: list[str]) -> str:
    made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>thermrig: {html.escape(campaign)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Campaign {html.escape(campaign)}</h1>",
        f'<p class="note">read from InfluxDB at {html.escape(source)}, {made}; definitions: docs/analysis.md</p>',
    ]
    if missing:
        items = "".join(f"<li>{html.escape(m)}</li>" for m in missing)
        parts.append(f'<div class="missing"><h2>Missing from the data</h2><ul>{items}</ul></div>')
    parts += [_table(tables[0])]
    parts += [_figure(title, png) for title, png in figures]
    parts += [_table(t) for t in tables[1:]]
    parts.append("</body></html>")
    return "\n".join(parts)
