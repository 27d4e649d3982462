-- 0017: a placeholder for another branch's migration (the lead renumbers at merge); nothing.
SELECT 1;
