#!/usr/bin/env bash
# The results DB beside Airflow's metadata DB (never the same database). Its schema comes from
# `omni-tasks db migrate` (airflow-init); the dashboards read it as omni_reader. Passwords come
# from the environment (.env), never from this file.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v omni_pw="$OMNI_DB_PASSWORD" -v reader_pw="$OMNI_READER_PASSWORD" <<'SQL'
CREATE USER omni WITH PASSWORD :'omni_pw';
CREATE DATABASE omni OWNER omni;
CREATE USER omni_reader WITH PASSWORD :'reader_pw';
SQL
