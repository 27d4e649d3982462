-- The queue engine's statements. Every write that depends on ownership is fenced by
-- job_id + collector_uuid + lease_token and an unexpired lease.

-- name: enqueue_insert
-- (bf4ps_enqueue_insert in db/schema.sql: interactive jobs only, but for the scheduler)
SELECT * FROM bf4ps_enqueue_insert(%(soldier_id)s, %(resource)s, %(lane)s, %(priority_class)s,
                                   %(rank)s, %(reason)s, %(eligible_at)s, %(request_id)s,
                                   %(lookup_name)s, %(lookup_platform)s)

-- name: enqueue_lock_existing
SELECT * FROM bf4ps_enqueue_lock_existing(%(soldier_id)s, %(resource)s)

-- name: enqueue_promote
SELECT * FROM bf4ps_enqueue_promote(%(job_id)s, %(lane)s, %(priority_class)s, %(rank)s,
                                    %(reason)s, %(request_id)s, %(eligible_at)s)

-- name: attach_request
SELECT bf4ps_job_attach_request(%(job_id)s, %(request_id)s)

-- name: claim_job
-- One call (queue_claim in db/schema.sql): the lane's first expired lease by rank if any
-- (reclaimed at once: lease_expired + reclaimed), else its first pending job by rank, locked
-- with SKIP LOCKED and handed a fresh lease token; with `start` (a slot open now) straight to
-- running. The claim writes no event: its instant travels on the row that ends the lease.
SELECT * FROM queue_claim(%(collector_uuid)s, %(lane)s, %(lease_seconds)s, %(soldier_id)s,
                          %(classes)s, %(start)s)

-- name: start_job
-- claimed → running at the slot, a heap-only update (no index names status or the times):
-- written alone because the slot is later than the claim. No event: the start's instant and
-- the claim→start wait travel on the row that ends the lease.
SELECT * FROM bf4ps_job_start(%(job_id)s, %(collector_uuid)s, %(lease_token)s,
                              %(started_at)s, %(lease_seconds)s)

-- name: reslot_job
-- The request went out in a later slot than the one its start recorded (that slot was given
-- up as late): the running job's start moves to the slot it was sent in (fenced by the lease),
-- and so do the claimed/started instants its final event carries.
SELECT bf4ps_job_reslot(%(job_id)s, %(collector_uuid)s, %(lease_token)s, %(sent_at)s,
                        %(lease_seconds)s)

-- name: renew_lease
SELECT * FROM bf4ps_job_renew(%(job_id)s, %(collector_uuid)s, %(lease_token)s,
                              %(lease_seconds)s)

-- name: expire_abandoned
-- A restarted collector's jobs from its previous process (dead: registration refuses to start
-- beside a live one): their leases end now, so the next claim reclaims them at once (with
-- lease_expired + reclaimed) instead of after the whole lease. Should the old process still
-- live somewhere, the new lease token fences it out.
SELECT * FROM bf4ps_jobs_expire_abandoned(%(collector_uuid)s)

-- name: lock_owned_job
-- The fence of finalize and fail: the caller must still own an unexpired lease. The row lock
-- keeps any reclaim out until this transaction ends.
SELECT * FROM bf4ps_job_lock_owned(%(job_id)s, %(collector_uuid)s, %(lease_token)s,
                                   %(statuses)s)

-- name: job_snapshot
SELECT * FROM bf4ps_job_snapshot(%(job_id)s, %(lease_token)s)

-- name: job_own_outcome
-- The outcome this lease already wrote for its job, if any (NULL: none): a finalize whose
-- commit landed while its answer was lost with the connection, so the retry finds the job no
-- longer ours (bf4ps_lease_outcome in db/schema.sql: the caller presents the lease's token).
SELECT bf4ps_lease_outcome(%(job_id)s, %(lease_token)s) AS event_type

-- name: job_note_error
-- A job about to be parked keeps its last error on the row its removal leaves behind (the
-- triggers of interactive requests read it: a look-up that found no soldier).
SELECT bf4ps_job_note_error(%(job_id)s, %(lease_token)s, %(error_class)s,
                            %(error_message)s)

-- name: delete_job
SELECT * FROM bf4ps_job_delete(%(job_id)s, %(lease_token)s)

-- name: job_retry
SELECT * FROM bf4ps_job_retry(%(job_id)s, %(lease_token)s, %(eligible_at)s,
                              %(error_class)s, %(error_message)s)

-- name: release_job
-- A claimed (never sent) job back to pending with its released event (carrying the claim's
-- instant), in one statement; fenced by the token (a release needs no unexpired lease).
SELECT * FROM bf4ps_job_release(%(job_id)s, %(collector_uuid)s, %(lease_token)s,
                                %(why)s)

-- name: reap_expired
-- The scheduler's reaper: expired leases go back to pending, with lease_expired (carrying the
-- lost lease's claimed/started instants) + reclaimed (bf4ps_reap_expired in db/schema.sql).
SELECT job_id, old_collector, old_token FROM bf4ps_reap_expired(%(limit)s)

-- name: finalize_success
-- The fenced success and, with `next`, the collector's next claim of any class (no gate: the
-- bench's cycle) in one call (queue_succeed in db/functions/queue.sql). `finished` is NULL
-- when the lease was not ours: nothing was written; with `strict` (callers that wrote
-- statistics earlier in the transaction) it raises BF401 instead, so that a COMMIT sent with
-- it rolls back.
SELECT c.*, NULL::timestamptz AS slot_at, NULL::bigint AS ledger_id
FROM queue_succeed(%(job_id)s, %(collector_uuid)s, %(lease_token)s, %(freshness_seconds)s,
                   %(http_status)s, %(duration_ms)s, %(details)s::jsonb, %(strict)s, %(next)s,
                   %(lane)s, %(lease_seconds)s, %(soldier_id)s, %(start)s) c

-- name: finalize_success_admitted
-- The same success, then the next job claimed inside one admission that counts its request
-- in its slot in the same commit (admission_succeed in db/functions/admission.sql: nothing is
-- claimed unless the egress opens within the horizon, of the classes the budget allows).
SELECT (c.claimed).*, c.slot_at, c.ledger_id
FROM admission_succeed(%(job_id)s, %(collector_uuid)s, %(lease_token)s,
                       %(freshness_seconds)s, %(http_status)s, %(duration_ms)s,
                       %(details)s::jsonb, %(strict)s, %(lease_seconds)s, %(soldier_id)s,
                       %(start)s, %(margin)s, %(ahead)s, %(connect_lead)s) c

-- name: lock_owned_job_now
-- Before a success's statistics: the lease is still ours (else nothing is written), and the
-- database's time. No row lock: queue_succeed's fenced DELETE is the fence that counts (a
-- lease lost meanwhile deletes nothing and the statistics roll back with it).
SELECT * FROM bf4ps_job_owned_now(%(job_id)s, %(collector_uuid)s, %(lease_token)s)

-- name: coverage_fold
-- The scheduler, every tick: the coverage deltas the state triggers appended move into the
-- counters (bf4ps_coverage_fold in db/schema.sql); readers add any not folded yet.
SELECT bf4ps_coverage_fold() AS folded
