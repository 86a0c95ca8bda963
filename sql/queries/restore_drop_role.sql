-- A restore's role, gone with whatever it still owns or holds in this database.
DROP OWNED BY {role};
DROP ROLE {role}
