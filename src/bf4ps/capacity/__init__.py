"""The capacity model (pure: no database, no clock): the scheduler's own rules — gates, budget
and measured send rate bound what the fleet can send; the feeder's class shares and resource
mix split it; time is stepped until the bootstrap is done and the steady state is reached."""
