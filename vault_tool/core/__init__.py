"""Values and rules, pure: memories, ids, redaction, schemas, call checks, time, text."""
