-- The applied migrations, checksummed (outside the omni schema, which migrations create).
CREATE TABLE IF NOT EXISTS public.omni_schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)
