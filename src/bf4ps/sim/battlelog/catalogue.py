"""How each weapon category (its code in data/weapons.csv) turns kills into shots and hits."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WeaponClass:
    """How a weapon category turns kills into shots, hits and headshots."""

    shots_per_kill: float
    accuracy: float  # multiplier of the persona's infantry accuracy
    headshots: float  # multiplier of the persona's headshot rate
    weight: float  # how much of a typical soldier's kills the category gets
    detailed: str | None = None  # generalStats prefix: assaultRifle, LMG, PDW, sniperRifle


WEAPON_CLASSES: dict[str, WeaponClass] = {
    "wA": WeaponClass(32.0, 1.0, 1.0, 1.6, "assaultRifle"),
    "wC": WeaponClass(30.0, 1.0, 1.0, 1.3),
    "waPDW": WeaponClass(28.0, 0.95, 0.8, 1.0, "PDW"),
    "wL": WeaponClass(45.0, 0.8, 0.6, 1.0, "LMG"),
    "wD": WeaponClass(7.0, 1.7, 1.6, 0.8),
    "wSR": WeaponClass(3.5, 2.3, 2.5, 1.0, "sniperRifle"),
    "waS": WeaponClass(2.6, 4.0, 0.4, 0.8),
    "wH": WeaponClass(11.0, 1.6, 1.0, 0.5),
    "wSP": WeaponClass(4.0, 3.0, 0.0, 0.25),
    "wX": WeaponClass(2.5, 2.5, 0.0, 0.3),
    "waRL": WeaponClass(3.0, 2.2, 0.0, 0.3),
    "wG": WeaponClass(5.0, 2.2, 0.0, 0.3),
    "waUL": WeaponClass(4.0, 2.8, 0.1, 0.25),
}
DEFAULT_CLASS = WeaponClass(10.0, 1.0, 0.5, 0.3)

LAUNCHER_CODES = frozenset({"waRL"})
