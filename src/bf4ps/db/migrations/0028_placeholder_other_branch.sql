-- Placeholder so this branch migrates on its own: 0028 belongs to another branch of this
-- session. Drop this file (this commit) when merging.
SELECT 1;
