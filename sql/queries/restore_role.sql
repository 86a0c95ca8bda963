-- The role a restore runs the backup's SQL as: no superuser, no role or database creation, no
-- inherited grants; it logs in with a one-off password and expires within the day.
CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION
    NOBYPASSRLS CONNECTION LIMIT 4 PASSWORD {password} VALID UNTIL {until}
