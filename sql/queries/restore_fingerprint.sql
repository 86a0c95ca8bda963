-- Every object of this database outside the system schemas, each as (kind, name, definition)
-- in this server's own rendering: a restore compares a backup restored into a scratch
-- database with what the migrations create, so the comparison does not depend on the server
-- version that made the backup.
WITH ns AS (
    SELECT oid, nspname FROM pg_namespace
    WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'
)
SELECT 'schema' AS kind, nspname AS name, '' AS definition FROM ns
UNION ALL
SELECT CASE WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'relation' END,
       ns.nspname || '.' || c.relname,
       concat_ws(' ', c.relkind::text, c.relpersistence::text,
                 CASE WHEN c.relrowsecurity THEN 'row security' END,
                 array_to_string(c.reloptions, ','),
                 'partition ' || pg_get_expr(c.relpartbound, c.oid),
                 'partitioned by ' || CASE WHEN c.relkind = 'p' THEN pg_get_partkeydef(c.oid) END)
FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
WHERE c.relkind NOT IN ('i', 'I', 't')
UNION ALL
SELECT 'column', ns.nspname || '.' || c.relname || '.' || a.attname,
       concat_ws(' ', format_type(a.atttypid, a.atttypmod),
                 CASE WHEN a.attnotnull THEN 'not null' END,
                 'default ' || pg_get_expr(d.adbin, d.adrelid),
                 'identity ' || nullif(a.attidentity::text, ''),
                 'generated ' || nullif(a.attgenerated::text, ''))
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN ns ON ns.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'f')
UNION ALL
SELECT 'constraint', ns.nspname || '.' || coalesce(c.relname, t.typname) || '.' || co.conname,
       pg_get_constraintdef(co.oid)
FROM pg_constraint co
JOIN ns ON ns.oid = co.connamespace
LEFT JOIN pg_class c ON c.oid = co.conrelid
LEFT JOIN pg_type t ON t.oid = co.contypid
UNION ALL
SELECT 'index', ns.nspname || '.' || c.relname, pg_get_indexdef(c.oid)
FROM pg_class c JOIN ns ON ns.oid = c.relnamespace
WHERE c.relkind IN ('i', 'I')
UNION ALL
SELECT 'sequence', ns.nspname || '.' || c.relname,
       concat_ws(' ', format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement, s.seqmin,
                 s.seqmax, s.seqcache, CASE WHEN s.seqcycle THEN 'cycle' END)
FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid JOIN ns ON ns.oid = c.relnamespace
UNION ALL
SELECT 'function', ns.nspname || '.' || p.proname
                   || '(' || pg_get_function_identity_arguments(p.oid) || ')', p.prokind::text
FROM pg_proc p JOIN ns ON ns.oid = p.pronamespace
UNION ALL
SELECT 'trigger', ns.nspname || '.' || c.relname || '.' || t.tgname, pg_get_triggerdef(t.oid)
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN ns ON ns.oid = c.relnamespace
WHERE NOT t.tgisinternal
UNION ALL
SELECT 'rule', ns.nspname || '.' || c.relname || '.' || r.rulename, pg_get_ruledef(r.oid)
FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class JOIN ns ON ns.oid = c.relnamespace
WHERE r.rulename <> '_RETURN'
UNION ALL
SELECT 'policy', ns.nspname || '.' || c.relname || '.' || p.polname,
       concat_ws(' ', pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid JOIN ns ON ns.oid = c.relnamespace
UNION ALL
SELECT 'type', ns.nspname || '.' || t.typname, t.typtype::text
FROM pg_type t JOIN ns ON ns.oid = t.typnamespace
WHERE t.typrelid = 0 AND t.typcategory <> 'A'
UNION ALL
SELECT 'extension', extname, extversion FROM pg_extension WHERE extname <> 'plpgsql'
UNION ALL
SELECT 'event trigger', evtname, evtevent FROM pg_event_trigger
UNION ALL
SELECT 'large object', oid::text, '' FROM pg_largeobject_metadata
UNION ALL
SELECT 'publication', pubname, '' FROM pg_publication
UNION ALL
SELECT 'foreign server', srvname, '' FROM pg_foreign_server
UNION ALL
SELECT 'operator', ns.nspname || '.' || o.oprname, '' FROM pg_operator o JOIN ns ON ns.oid = o.oprnamespace
UNION ALL
SELECT 'statistics', ns.nspname || '.' || s.stxname, '' FROM pg_statistic_ext s JOIN ns ON ns.oid = s.stxnamespace
ORDER BY 1, 2, 3
