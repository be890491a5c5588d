"""The records one part of the platform writes and another reads, one class each.

Each record has ``to_json`` (what the writer stores) and ``from_json`` (what the reader parses, refusing a record
of another version with an error that names both versions). The package imports only the standard library, so
the webhook server, the Lambda handlers and the constructs can all carry it.
"""
