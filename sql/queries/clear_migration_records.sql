-- A restore replaces the migration records with the backup's.
DELETE FROM public.omni_schema_migrations
