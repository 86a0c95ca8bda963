SELECT version, checksum FROM public.omni_schema_migrations
