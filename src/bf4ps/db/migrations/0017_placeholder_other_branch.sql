-- Placeholder of the progress branch: migration 0017 belongs to another branch (the lead's merge
-- replaces this file with that branch's migration). It changes nothing.
SELECT 1;
