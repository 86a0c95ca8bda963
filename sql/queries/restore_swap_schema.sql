-- The restored schema replaces the results schema (one transaction with what follows: the
-- migrations' own views, functions and triggers, their grants, the migration records).
DROP SCHEMA IF EXISTS omni CASCADE;
ALTER SCHEMA {staged} RENAME TO omni;
REASSIGN OWNED BY {role} TO CURRENT_USER
