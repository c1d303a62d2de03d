"""InfluxDB: the local server, where to write, the schema, the durable spool and its writer, queries."""
