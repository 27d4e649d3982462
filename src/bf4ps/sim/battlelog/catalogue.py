"""What the 2013 fixtures lack of the live catalogue, and how each weapon category behaves.

The 2013 weapons fixture has 136 items, the live service 173-174; the vehicles fixture 53 items in
15 categories, the live service 82 in 27. The missing ones are cloned from a similar real item
(slug, source slug, category for vehicles). Names are the DLC/later additions where known.
"""

from __future__ import annotations

from dataclasses import dataclass

NEW_WEAPONS: tuple[tuple[str, str, str | None], ...] = tuple(
    (slug, source, None)
    for slug, source in (
        ("ar160", "ak-12"),
        ("bulldog", "ak-12"),
        ("f2000", "ak-12"),
        ("groza-4", "ak-12"),
        ("groza-1", "acw-r"),
        ("aks-74u", "acw-r"),
        ("mpx", "mx4"),
        ("sr-2", "mx4"),
        ("as-val", "mx4"),
        ("m60-e4", "u-100-mk5"),
        ("l86a2", "u-100-mk5"),
        ("aws", "u-100-mk5"),
        ("sr338", "rfb"),
        ("cs5", "cs-lr4"),
        ("l115", "cs-lr4"),
        ("gol-magnum", "cs-lr4"),
        ("rorsch-mk-1", "cs-lr4"),
        ("dao-12", "qbs-09"),
        ("mts-255", "qbs-09"),
        ("deagle-44", "p226"),
        ("unica-6", "p226"),
        ("sw40", "p226"),
        ("m1911-s-tac", "p226"),
        ("phantom-bow", "repair-tool"),
        ("mares-leg", "repair-tool"),
        ("sawed-off", "repair-tool"),
        ("aa-mine", "c4-explosive"),
        ("xd-1-accipiter", "c4-explosive"),
        ("seal", "bayonet"),
        ("tactical", "bayonet"),
        ("dive", "bayonet"),
        ("neck", "bayonet"),
        ("c100", "bayonet"),
        ("karambit", "bayonet"),
        ("tanto", "bayonet"),
        ("ace-of-spades", "bayonet"),
        ("bj-2", "bayonet"),
        ("dragon-blade", "bayonet"),
    )
)

NEW_VEHICLES: tuple[tuple[str, str, str | None], ...] = (
    ("m1128", "btr-90", "Vehicle Tank Destroyer"),
    ("zbd-09-td", "zbd-09", "Vehicle Tank Destroyer"),
    ("bmp-2m", "lav-25", "Vehicle Tank Destroyer"),
    ("ht-95-levkov", "t-90a", "Vehicle Hover Tank"),
    ("rawr", "btr-90", "Vehicle Remote Weapon"),
    ("mi-8", "ka-60-kasatka", "Vehicle Air Helicopter Transport"),
    ("uh-1y-transport", "uh-1y-venom", "Vehicle Air Helicopter Transport"),
    ("lcac", "rhib-boat", "Vehicle Hovercraft"),
    ("snowmobile", "quad-bike", "Vehicle Snowmobile"),
    ("m2-hb", "50-cal", "Weapon Stationary MG"),
    ("kord", "50-cal", "Weapon Stationary MG"),
    ("centurion-c-ram", "ld-2000-aa", "Weapon Stationary Artillery"),
    ("xd-1-drone", "mav", "Soldier Equipment Drone"),
    ("ac-130-spectre", "ac-130-gunship", "Vehicle Air Gunship"),
    ("pandur", "lav-25", "Vehicle Armored Car"),
    ("wz-551", "lav-25", "Vehicle Armored Car"),
    ("sprut-sd", "t-90a", "Vehicle Light Tank"),
    ("m1a2-tusk", "m1-abrams", "Vehicle Main Battle Tanks"),
    ("t-90ms", "t-90a", "Vehicle Main Battle Tanks"),
    ("bmp-3", "btr-90", "Vehicle Infantry Fighting Vehicle"),
    ("2s6-tunguska", "9k22-tunguska-m", "Vehicle Anti Air"),
    ("ah-64-apache", "ah-1z-viper", "Vehicle Air Helicopter Attack"),
    ("mh-6", "ah-6j-little-bird", "Vehicle Air Helicopter Scout"),
    ("f-22", "f35", "Vehicle Air Jet Stealth"),
    ("su-39", "su-25tm-frogfoot", "Vehicle Air Jet Attack"),
    ("cb-90-legacy", "rcb", "Vehicle Fast Attack Craft"),
    ("growler-itv", "m1161-itv", "Vehicle Transport"),
    ("vodnik", "mrap", "Vehicle Transport"),
    ("m142-himars", "m142", "Vehicle Mobile Artillery"),
)


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
