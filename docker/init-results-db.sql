-- The results DB beside Airflow's metadata DB (never the same database). Its schema comes from
-- `omni-tasks db migrate` (airflow-init); the dashboards read it as omni_reader.
CREATE USER omni WITH PASSWORD 'omni';
CREATE DATABASE omni OWNER omni;
CREATE USER omni_reader WITH PASSWORD 'omni_reader';
