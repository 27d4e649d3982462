-- Reading the real schema back from pg_catalog (public schema, partitions folded into parents).

-- name: catalog_columns
SELECT c.relname AS table_name, a.attname AS column_name,
       format_type(a.atttypid, a.atttypmod) AS data_type, NOT a.attnotnull AS nullable,
       pg_get_expr(d.adbin, d.adrelid) AS default, a.attidentity::text AS identity
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
ORDER BY 1, a.attnum

-- name: catalog_storage
-- a table's storage where it is not the default: unlogged, or with storage parameters
SELECT c.relname AS table_name,
       concat_ws(' ', CASE c.relpersistence WHEN 'u' THEN 'UNLOGGED' END,
                 CASE WHEN c.reloptions IS NOT NULL
                      THEN 'WITH (' || array_to_string(c.reloptions, ', ') || ')' END)
           AS definition
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND (c.relpersistence = 'u' OR c.reloptions IS NOT NULL)
ORDER BY 1

-- name: catalog_constraints
SELECT c.relname AS table_name, k.conname AS name, pg_get_constraintdef(k.oid) AS definition
FROM pg_constraint k
JOIN pg_class c ON c.oid = k.conrelid
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
WHERE NOT c.relispartition AND k.contype <> 'n'  -- NOT NULL is a column property (PG 18 lists it)
ORDER BY 1, 2

-- name: catalog_indexes
SELECT t.relname AS table_name, i.relname AS name, pg_get_indexdef(i.oid) AS definition
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace AND n.nspname = 'public'
WHERE NOT t.relispartition
ORDER BY 1, 2

-- name: catalog_triggers
SELECT c.relname AS table_name, g.tgname AS name, pg_get_triggerdef(g.oid) AS definition
FROM pg_trigger g
JOIN pg_class c ON c.oid = g.tgrelid
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
WHERE NOT g.tgisinternal
ORDER BY 1, 2

-- name: catalog_functions
-- by signature: an overloaded name is two functions (by name alone one hid the other, and
-- which one depended on the server's order)
SELECT p.oid::regprocedure::text AS name, md5(pg_get_functiondef(p.oid)) AS definition
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace AND n.nspname = 'public'
ORDER BY 1

-- name: catalog_domains
SELECT t.typname AS name,
       format_type(t.typbasetype, t.typtypmod)
       || COALESCE(' ' || string_agg(pg_get_constraintdef(k.oid), ' ' ORDER BY k.conname), '')
       AS definition
FROM pg_type t
JOIN pg_namespace n ON n.oid = t.typnamespace AND n.nspname = 'public'
LEFT JOIN pg_constraint k ON k.contypid = t.oid AND k.contype = 'c'
WHERE t.typtype = 'd'
GROUP BY t.oid, t.typname
ORDER BY 1

-- name: catalog_views
SELECT c.relname AS name, pg_get_viewdef(c.oid) AS definition
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
WHERE c.relkind = 'v'
ORDER BY 1

-- The readable schema (bf4ps/db/schema.sql) needs, besides the above, the full text of each
-- function, composite types, partition keys and who may use what.

-- name: schema_function_texts
SELECT p.oid::regprocedure::text AS signature, pg_get_functiondef(p.oid) AS definition
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace AND n.nspname = 'public'
WHERE p.prokind IN ('f', 'p')
ORDER BY 1

-- name: schema_composite_types
SELECT t.typname AS name,
       string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', '
                  ORDER BY a.attnum) AS definition
FROM pg_type t
JOIN pg_namespace n ON n.oid = t.typnamespace AND n.nspname = 'public'
JOIN pg_class c ON c.oid = t.typrelid AND c.relkind = 'c'
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
GROUP BY t.typname
ORDER BY 1

-- name: schema_partition_keys
SELECT c.relname AS table_name, pg_get_partkeydef(c.oid) AS definition
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
WHERE c.relkind = 'p' AND NOT c.relispartition
ORDER BY 1

-- name: schema_constraint_indexes
SELECT i.relname AS name
FROM pg_constraint k
JOIN pg_class i ON i.oid = k.conindid
JOIN pg_namespace n ON n.oid = i.relnamespace AND n.nspname = 'public'
WHERE k.contype IN ('p', 'u', 'x')

-- Who may use what beyond the owner, defaults spelled out (a function nobody revoked is
-- PUBLIC's); the owner's name depends on who ran the migrations and is left out, and so is
-- PUBLIC's use of the public schema (PostgreSQL's own default, which changed in 15).
-- name: schema_grants
WITH acl AS (
    SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END AS kind,
           c.relname::text AS object, NULL::text AS col, 0 AS attnum, x.grantee,
           x.privilege_type, c.relowner AS owner
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
    CROSS JOIN LATERAL aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) x
    WHERE c.relkind IN ('r', 'p', 'v', 'S') AND NOT c.relispartition
    UNION ALL
    SELECT 'TABLE', c.relname::text, a.attname::text, a.attnum, x.grantee, x.privilege_type,
           c.relowner
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    CROSS JOIN LATERAL aclexplode(a.attacl) x
    WHERE NOT c.relispartition
    UNION ALL
    SELECT 'FUNCTION', p.oid::regprocedure::text, NULL, 0, x.grantee, x.privilege_type,
           p.proowner
    FROM pg_proc p
    JOIN pg_namespace n ON n.oid = p.pronamespace AND n.nspname = 'public'
    CROSS JOIN LATERAL aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) x
    WHERE p.prokind IN ('f', 'p')
    UNION ALL
    SELECT 'SCHEMA', n.nspname::text, NULL, 0, x.grantee, x.privilege_type, n.nspowner
    FROM pg_namespace n
    CROSS JOIN LATERAL aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) x
    WHERE n.nspname = 'public'
)
SELECT kind, object,
       CASE WHEN grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(grantee)::text END AS grantee,
       privilege_type AS privilege, string_agg(col, ', ' ORDER BY attnum) AS columns
FROM acl
WHERE grantee <> owner AND NOT (kind = 'SCHEMA' AND grantee = 0)
GROUP BY kind, object, grantee, privilege_type, col IS NULL
ORDER BY kind, object, 3, col IS NULL DESC, privilege_type
