"""Results store: Postgres over psycopg 3 (connection, migrations, idempotent writes)."""
