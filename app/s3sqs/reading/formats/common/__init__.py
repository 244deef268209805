"""What more than one format's reader uses: Spark's datetime parsing for the text formats (spark_datetime),
and the schemas and rescued data of the formats that carry their own types (typed_schema, typed_rescue)."""
