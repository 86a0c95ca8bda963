-- A non-superuser restoring must hold a restore role's privileges to hand its objects over.
GRANT {role} TO CURRENT_USER
