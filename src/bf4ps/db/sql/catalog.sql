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
SELECT p.proname AS name, md5(pg_get_functiondef(p.oid)) AS definition
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
