-- A restore replaces the results schema whole (the backup's own objects are recreated).
DROP SCHEMA IF EXISTS omni CASCADE
