-- A scratch database a restore vets a backup in (dropped afterwards).
CREATE DATABASE {db} TEMPLATE template0
