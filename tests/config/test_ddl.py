"""s3sqs.config.ddl: Spark DDL schema strings parsed without Spark.

The tables below are also run through Spark itself (tests/config/test_ddl_in_spark.py): every VALID string must
parse there to the same columns, and every SPARK_REJECTS string must fail there too. REFUSED holds what Spark
may take but this module refuses on purpose, each for the reason its message gives.
"""
from __future__ import annotations

import pytest

from s3sqs.config.ddl import SchemaError, parse_schema

# (DDL, [(name, Spark simpleString, nullable, comment)])
VALID = [
    ("id LONG, name STRING", [("id", "bigint", True, None), ("name", "string", True, None)]),
    ("doc VARIANT", [("doc", "variant", True, None)]),
    ("a BIGINT, b INT, c INTEGER, d SHORT, e SMALLINT, f BYTE, g TINYINT",
     [("a", "bigint", True, None), ("b", "int", True, None), ("c", "int", True, None),
      ("d", "smallint", True, None), ("e", "smallint", True, None), ("f", "tinyint", True, None),
      ("g", "tinyint", True, None)]),
    ("d DOUBLE, f FLOAT, r REAL, ok BOOLEAN, raw BINARY",
     [("d", "double", True, None), ("f", "float", True, None), ("r", "float", True, None),
      ("ok", "boolean", True, None), ("raw", "binary", True, None)]),
    ("day DATE, ts TIMESTAMP, ltz TIMESTAMP_LTZ, ntz TIMESTAMP_NTZ",
     [("day", "date", True, None), ("ts", "timestamp", True, None), ("ltz", "timestamp", True, None),
      ("ntz", "timestamp_ntz", True, None)]),
    ("code CHAR(3), label VARCHAR(40), c2 CHARACTER(2)",
     [("code", "char(3)", True, None), ("label", "varchar(40)", True, None), ("c2", "char(2)", True, None)]),
    ("amount DECIMAL(10,2), d DEC, n NUMERIC(5), x decimal( 38 , 38 )",
     [("amount", "decimal(10,2)", True, None), ("d", "decimal(10,0)", True, None),
      ("n", "decimal(5,0)", True, None), ("x", "decimal(38,38)", True, None)]),
    ("tags ARRAY<STRING>, attrs MAP<STRING, INT>, nested ARRAY<ARRAY<INT>>",
     [("tags", "array<string>", True, None), ("attrs", "map<string,int>", True, None),
      ("nested", "array<array<int>>", True, None)]),
    ("addr STRUCT<street: STRING, zip INT NOT NULL COMMENT 'postal'>, e STRUCT<>",
     [("addr", "struct<street:string,zip:int>", True, None), ("e", "struct<>", True, None)]),
    ("m MAP<ARRAY<INT>, STRUCT<x: INT>>", [("m", "map<array<int>,struct<x:int>>", True, None)]),
    ("a STRUCT<`x y`: INT, z: MAP<STRING, ARRAY<STRUCT<q: DOUBLE>>>>",
     [("a", "struct<x y:int,z:map<string,array<struct<q:double>>>>", True, None)]),
    ("a: INT, b: STRING", [("a", "int", True, None), ("b", "string", True, None)]),
    ("a: INT NOT NULL, b STRING", [("a", "int", False, None), ("b", "string", True, None)]),
    ("a INT NOT NULL COMMENT 'the id', b STRING COMMENT \"double quoted\"",
     [("a", "int", False, "the id"), ("b", "string", True, "double quoted")]),
    ("a INT COMMENT 'it\\'s'", [("a", "int", True, "it's")]),
    ("`order id` LONG, `a``b` INT, `x,y: z` STRING",
     [("order id", "bigint", True, None), ("a`b", "int", True, None), ("x,y: z", "string", True, None)]),
    ("select INT, from STRING, comment STRING, `not` INT",
     [("select", "int", True, None), ("from", "string", True, None), ("comment", "string", True, None),
      ("not", "int", True, None)]),
    ("1a INT, 12abc INT, 1e5x INT", [("1a", "int", True, None), ("12abc", "int", True, None),
                                    ("1e5x", "int", True, None)]),
    ("  id long  ,\n name string  ", [("id", "bigint", True, None), ("name", "string", True, None)]),
    ("a INT -- the id\n, b STRING /* a block */", [("a", "int", True, None), ("b", "string", True, None)]),
    ("_file_path STRING, _file_size LONG, _file_event_time TIMESTAMP",
     [("_file_path", "string", True, None), ("_file_size", "bigint", True, None),
      ("_file_event_time", "timestamp", True, None)]),
]

# (DDL, what the message must say): Spark's parser rejects these too.
SPARK_REJECTS = [
    ("id LONG, name STRNG", "unknown type 'STRNG' for column 'name' at character 15 near 'id LONG, name STRNG'; "
                            "did you mean STRING?"),
    ("id LONG name STRING", "expected ',' between columns, got 'name' at character 9"),
    ("id LONG,", "a column name is missing after ',' at the end; remove the trailing ','"),
    ("id", "column 'id' has no type at the end; e.g. `id` STRING"),
    ("id LONG, , name STRING", "expected a column name, got ',' at character 10"),
    ("a-b INT", "unexpected character '-' at character 2"),
    ("naïve INT", "unexpected character 'ï' at character 3"),
    ("a.b INT", "must be `backquoted`"),
    ("1L INT", "column name '1L' reads as a number at character 1 near '1L INT'; backquote it: `1L`"),
    ("1e5 INT", "column name '1e5' reads as a number"),
    ("12 INT", "column name '12' reads as a number"),
    ("1bd INT", "column name '1bd' reads as a number"),
    ("a DECIMAL(39)", "DECIMAL precision 39 is out of range at character 3"),
    ("a DECIMAL(5,6)", "DECIMAL scale 6 is larger than its precision 5"),
    ("a DECIMAL(5,2,1)", "expected ')' to close DECIMAL(, at most 2 numbers, got ','"),
    ("a DECIMAL(x)", "expected a whole number in DECIMAL(...), got 'x'"),
    ("a VARCHAR", "type VARCHAR needs a length at the end; e.g. VARCHAR(10), or STRING for text of any length"),
    ("a CHAR, b INT", "type CHAR needs a length at character 7"),
    ("a BIGINT(20)", "type BIGINT takes no parameters at character 9"),
    ("a ARRAY<INT", "expected '>' to close ARRAY<, got the end"),
    ("a ARRAY INT", "expected '<' after ARRAY (ARRAY<element type>), got 'INT'"),
    ("a MAP<STRING>", "expected ',' between the key and value types of MAP<key, value>, got '>'"),
    ("a MAP<STRING,INT>>", "expected ',' between columns, got '>' at character 18"),
    ("a ARRAY<INT NOT NULL>", "expected '>' to close ARRAY<, got 'NOT'"),
    ("a STRUCT<x INT", "expected ',' between columns or '>' to close STRUCT<, got the end"),
    ("a STRUCT<x>", "column 'x' has no type at character 11"),
    ("a INT COMMENT x", "expected a quoted comment after COMMENT, got 'x'"),
    ("a INT NOT", "expected NULL after NOT, got the end"),
    ("`a INT", "name opened with ` at character 1 is never closed"),
    ("a INT COMMENT 'x", "text opened with ' at character 15 is never closed"),
    ("a INT /* x", "comment opened at character 7 is never closed with */"),
    ("a INT; b INT", "unexpected character ';' at character 6"),
]

# (DDL, what the message must say): Spark may take these; the source's pre-flight refuses them on purpose.
REFUSED = [
    ("", "--schema is empty"),  # Spark reads an empty schema: no columns at all
    ("   ", "--schema is empty"),
    ("a INT, A STRING", "column 'A' is declared twice at character 8"),
    ("s STRUCT<x INT, x STRING>", "column 'x' is declared twice"),
    ("`` INT", "a column name is empty at character 1"),
    ("a STRING COLLATE UTF8_LCASE", "collations (STRING COLLATE ...) are not supported here"),
    ("a INTERVAL", "type INTERVAL (column 'a') is not one the s3-sqs source reads from files"),
    ("a VOID", "type VOID (column 'a') is not one"),
    ("STRUCT<a: INT>", "a schema lists its columns without STRUCT<...> around them"),
    ("INT", "column 'INT' has no type"),
    ("a INT COMMENT 'a' 'b'", "expected ',' between columns, got 'b'"),  # Spark 4.3 joins them; 4.0.2 refuses
    ("a TIMESTAMP WITHOUT TIME ZONE", "expected ',' between columns, got 'WITHOUT'"),  # 4.3 only
]


def columns(text: str) -> list[tuple]:
    return [(c.name, c.type.simple, c.nullable, c.comment) for c in parse_schema(text).columns]


@pytest.mark.parametrize("text, expected", VALID, ids=[v[0] for v in VALID])
def test_valid_schemas_parse_to_spark_s_names_and_types(text, expected):
    assert columns(text) == expected


@pytest.mark.parametrize("text", [v[0] for v in VALID])
def test_the_canonical_form_is_the_same_schema(text):
    schema = parse_schema(text)
    assert parse_schema(schema.ddl) == schema


@pytest.mark.parametrize("text, message", SPARK_REJECTS + REFUSED, ids=[v[0] or "(empty)" for v in SPARK_REJECTS + REFUSED])
def test_invalid_schemas_fail_with_one_line_naming_the_flag_and_where(text, message):
    with pytest.raises(SchemaError) as e:
        parse_schema(text)
    text_of_error = str(e.value)
    assert message in text_of_error
    assert text_of_error.startswith("--schema") and "\n" not in text_of_error


def test_the_flag_named_is_the_caller_s():
    with pytest.raises(SchemaError, match=r"^--option schema: unknown type"):
        parse_schema("a STRNG", flag="--option schema")


def test_names_and_lookup():
    schema = parse_schema("id LONG, `day` STRING")
    assert schema.names == ["id", "day"]
    assert schema.column("day").type.simple == "string" and schema.column("DAY") is None
    assert schema.ddl == "`id` BIGINT, `day` STRING"
