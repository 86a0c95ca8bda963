-- Every applied migration, as a backup's manifest records it.
SELECT version, name, checksum FROM public.omni_schema_migrations ORDER BY version
