-- Everything in this database a role owns or holds a grant on that is not a schema, table,
-- partitioned table or sequence: a restore's own role creates nothing else.
SELECT pg_describe_object(d.classid, d.objid, d.objsubid) AS object
FROM pg_shdepend d
JOIN pg_roles r ON r.oid = d.refobjid
LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
WHERE r.rolname = %(role)s
  AND d.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND NOT (d.deptype = 'o' AND d.classid = 'pg_namespace'::regclass)
  AND NOT (d.deptype = 'o' AND c.relkind IN ('r', 'p', 'S'))
ORDER BY 1
