"""Reads an export the way its users will (Python's csv and json modules)
and checks every field against its column's kind.

usage: check_rows.py csv|ndjson FILE COLUMNS_JSON ROWS
COLUMNS_JSON is [{"name":..., "kind": "string|int|float|bool"}, ...] in order;
ROWS is the number of rows expected. Prints one line per problem, exits 1.
"""
import csv
import json
import math
import sys

fmt, path, columns, want_rows = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
names = [c["name"] for c in columns]
kinds = {c["name"]: c["kind"] for c in columns}
problems = []


def check_csv_value(i, name, v):
    if v == "":
        return
    k = kinds[name]
    try:
        if k == "int":
            int(v)
        elif k == "float":
            if not math.isfinite(float(v)):
                raise ValueError("not finite")
        elif k == "bool":
            if v not in ("true", "false"):
                raise ValueError("not true or false")
    except ValueError as e:
        problems.append(f"row {i} {name}={v!r}: not {k} ({e})")


def check_json_value(i, name, v):
    if v is None:
        return
    k = kinds[name]
    ok = {
        "string": isinstance(v, str),
        "int": isinstance(v, int) and not isinstance(v, bool),
        # JSON has one number type: a whole float reads back as an int.
        "float": isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
        "bool": isinstance(v, bool),
    }[k]
    if not ok:
        problems.append(f"row {i} {name}={v!r}: not {k}")


rows = []
if fmt == "csv":
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        if r.fieldnames != names:
            problems.append(f"header {r.fieldnames} != {names}")
        for i, row in enumerate(r):
            rows.append(row)
            if None in row or len(row) != len(names):
                problems.append(f"row {i}: {len(row)} fields, want {len(names)}")
                continue
            for name in names:
                check_csv_value(i, name, row[name])
else:
    with open(path) as f:
        for i, line in enumerate(f):
            row = json.loads(line)
            rows.append(row)
            if list(row) != names:
                problems.append(f"row {i}: keys {list(row)} != {names}")
                continue
            for name in names:
                check_json_value(i, name, row[name])

if len(rows) != want_rows:
    problems.append(f"{len(rows)} rows, want {want_rows}")
for p in problems[:20]:
    print(p)
sys.exit(1 if problems else 0)
