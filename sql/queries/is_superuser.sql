SELECT current_setting('is_superuser') = 'on' AS superuser, current_database() AS db
