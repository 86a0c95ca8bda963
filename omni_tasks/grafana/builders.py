"""Grafana's dashboard JSON, built from Python: query targets, panels, column overrides,
variables and links, as the Postgres datasource and Grafana's schema (version 39) spell them.
What the dashboards show (their SQL and text) is in dashboards.py."""

from __future__ import annotations

from pydantic import JsonValue

from omni_tasks.contracts import JsonObject

# Panels read the `datasource` variable (dashboards.py sets its default).
DATASOURCE: JsonObject = {"type": "grafana-postgresql-datasource", "uid": "${datasource}"}


def target(sql: str, ref: str = "A", fmt: str = "time_series") -> JsonObject:
    """A raw-SQL query of the results DB (whitespace folded to single spaces)."""
    return {
        "refId": ref,
        "datasource": DATASOURCE,
        "rawQuery": True,
        "editorMode": "code",
        "format": fmt,
        "rawSql": " ".join(sql.split()),
    }


def panel(
    pid: int,
    title: str,
    kind: str,
    grid: tuple[int, int, int, int],
    targets: list[JsonValue],
    description: str,
    *overrides: JsonValue,
    **defaults: JsonValue,
) -> JsonObject:
    """A panel; its `fieldConfig` (when it has one) holds `defaults` and `overrides` (styles
    of the columns or lines they match)."""
    x, y, w, h = grid
    out: JsonObject = {
        "id": pid,
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "targets": targets,
    }
    if overrides or defaults:
        out["fieldConfig"] = {"defaults": defaults, "overrides": list(overrides)}
    return out


def fixed(
    name: str, label: str, kind: str, query: str, current: str, **extra: JsonValue
) -> JsonObject:
    """A variable that is not a query (a datasource, a text box, a custom list), set to
    `current`."""
    return {
        "name": name,
        "label": label,
        "type": kind,
        "query": query,
        "current": {"text": current, "value": current},
        **extra,
    }


def table(
    pid: int,
    title: str,
    grid: tuple[int, int, int, int],
    sql: str,
    description: str,
    *overrides: JsonValue,
) -> JsonObject:
    """A table panel of one query; `overrides` style its columns."""
    return panel(pid, title, "table", grid, [target(sql, fmt="table")], description, *overrides)


def override(column: str, *properties: JsonValue, by: str = "byName") -> JsonObject:
    """Properties of the columns (or lines) `column` names, by name or (`byRegexp`) pattern."""
    return {"matcher": {"id": by, "options": column}, "properties": list(properties)}


def coloured(column: str, colours: dict[str, str], by: str = "byName") -> JsonObject:
    """A table column whose cells are coloured by their value (a verdict)."""
    options: JsonObject = {value: {"color": colour} for value, colour in colours.items()}
    return override(
        column,
        {"id": "custom.cellOptions", "value": {"type": "color-background"}},
        {"id": "mappings", "value": [{"type": "value", "options": options}]},
        by=by,
    )


def line(value: float, color: str) -> JsonObject:
    """Field defaults drawing a horizontal line at `value` (a gate, an SLO)."""
    steps: list[JsonValue] = [
        {"color": "transparent", "value": None},
        {"color": color, "value": value},
    ]
    return {
        "thresholds": {"mode": "absolute", "steps": steps},
        "custom": {"thresholdsStyle": {"mode": "line"}},
    }


def units(**columns: str) -> list[JsonValue]:
    """Overrides giving table columns their unit (shares as percent, p-values in scientific
    notation), so a cell reads 27 % or 5.6e-8, not 0.27 or 5.587935447692871e-08."""
    return [
        override(name, {"id": "unit", "value": unit}, {"id": "decimals", "value": 2})
        for name, unit in columns.items()
    ]


def variable(name: str, sql: str, multi: bool = False, label: str | None = None) -> JsonObject:
    return {
        "name": name,
        "label": label or name,
        "type": "query",
        "datasource": DATASOURCE,
        "query": sql,
        "definition": sql,
        "refresh": 2,
        "multi": multi,
        "includeAll": multi,
        "current": {},
        "sort": 1,
    }


def linked(column: str, title: str, url: str, **extra: JsonValue) -> JsonObject:
    """A table column whose cells link to `url` (`${__value.raw}` there is the cell's value)."""
    return override(column, {"id": "links", "value": [{"title": title, "url": url, **extra}]})


def link(title: str, url: str) -> JsonObject:
    """A dashboard link that opens in a new tab."""
    return {"title": title, "type": "link", "url": url, "targetBlank": True}
