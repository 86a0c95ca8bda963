-- What a restore's role needs of a database: to connect and to create its schema there.
GRANT CONNECT, CREATE ON DATABASE {db} TO {role}
