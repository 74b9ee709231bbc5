"""What GPUs cost: rental and purchase prices, training runs, ownership, serving.

Every price in ``data/prices.csv`` carries its date, provider and a confidence (high: vendor
launch price; medium: a provider's list price; low: a third-party report). Discounts, interruption
rates, power and server overheads are in ``data/cost_assumptions.csv`` as low/expected/high with
their sources; every function takes the reader's own figures instead.
"""

from dataclasses import dataclass
from functools import cache
from math import sqrt
from types import MappingProxyType

import pandas as pd

from . import _data, compute, gpus, memory, steptime, traffic
from .estimate import Estimate
from .gpus import GPU
from .models import Model
from .units import HOUR, YEAR, check_instance, check_positive, check_range, check_result, renamed_keywords

PRICE_KINDS = ("purchase", "cloud_hour", "reserved_hour", "used_purchase")
#: A row of this kind, without a price, says where a GPU was looked for and found not for rent.
NOT_RENTED = "not_rented"
PRICING = ("on_demand", "reserved_1y", "reserved_3y", "spot", "owned")
#: :func:`ownership` keywords that leave only servers and energy: what a reader who already has a
#: building, a network, storage and a team pays.
SERVERS_AND_ENERGY = MappingProxyType({"colocation_usd_per_kw_month": 0, "staff_usd_per_gpu_year": 0,
                                       "network_share": 0, "storage_share": 0})
HOURS_PER_YEAR = YEAR / HOUR  # 8,766: 365.25 days
HOURS_PER_MONTH = HOURS_PER_YEAR / 12
#: Longest horizon of an ownership calculation: hardware is written off in 3-6 years.
MAX_YEARS = 30
#: Allowed values of the reader's own assumptions, by argument (low, high, low end open, high end open).
LIMITS = {"discount": (0, 1, False, True), "interruptions_per_month": (0, 1e4, False, False),
          "checkpoint_minutes": (0, 1e4, False, False), "restart_minutes": (0, 1e4, False, False),
          "pue": (1, 10, False, False), "electricity_usd_per_kwh": (0, 100, False, False),
          "colocation_usd_per_kw_month": (0, 1e4, False, False), "staff_usd_per_gpu_year": (0, 1e6, False, False),
          "network_share": (0, 10, False, False), "storage_share": (0, 10, False, False)}


def prices() -> pd.DataFrame:
    """Every price row: gpu, kind (purchase, cloud_hour, reserved_hour, or not_rented without a
    price: where the GPU was looked for), usd, date, provider, source, confidence."""
    return _data.table("prices").copy()


@cache
def _medians() -> dict[tuple[str, str], float]:
    """(gpu, kind) -> median price over the providers in the data (computed once)."""
    return _data.table("prices").groupby(["gpu", "kind"])["usd"].median().to_dict()


def price(gpu: "GPU | str", kind: str = "cloud_hour") -> float | None:
    """Median ``kind`` price of ``gpu`` over the providers in the data, in US dollars (per GPU-hour
    for rentals), or None when there is none."""
    if kind not in PRICE_KINDS:
        raise ValueError(f"kind={kind!r} is not supported; choose one of {', '.join(PRICE_KINDS)}")
    return _medians().get((gpus.get(gpu).name, kind))


def price_summary() -> pd.DataFrame:
    """Per catalog GPU: how many on-demand prices the data holds, their lowest, median and highest
    (US dollars per GPU-hour) and dates, and the median purchase price (US dollars)."""
    table = _data.table("prices")
    rent = table[table["kind"] == "cloud_hour"].groupby("gpu")
    summary = pd.DataFrame({"on-demand prices": rent.size(), "lowest (USD/h)": rent["usd"].min(),
                            "median (USD/h)": rent["usd"].median(), "highest (USD/h)": rent["usd"].max(),
                            "dated": rent["date"].agg(lambda d: f"{min(d)}–{max(d)}" if min(d) != max(d) else min(d)),
                            "purchase (USD)": table[table["kind"] == "purchase"].groupby("gpu")["usd"].median()})
    return summary.reindex(gpus.names()).rename_axis("gpu").reset_index()


def assumption(name: str) -> Estimate:
    """A sourced low/expected/high assumption of ``data/cost_assumptions.csv`` (see its ``source``)."""
    table = _data.table("cost_assumptions").set_index("name")
    if not isinstance(name, str) or name not in table.index:
        raise ValueError(f"name={name!r} is not a known assumption; known: {', '.join(table.index)}")
    row = table.loc[name]
    return Estimate(float(row["low"]), float(row["expected"]), float(row["high"]))


def _given(value: "float | Estimate | None", name: str, argument: str) -> Estimate:
    """The reader's ``argument`` (a number or an Estimate, each end within :data:`LIMITS`), or the
    sourced assumption ``name``."""
    if value is None:
        return assumption(name)
    low, high, low_open, high_open = LIMITS[argument]
    for end in (value.low, value.high) if isinstance(value, Estimate) else (value,):
        check_range(argument, end, low, high, low_open=low_open, high_open=high_open)
    return value if isinstance(value, Estimate) else Estimate.exact(float(value))


def spot_overhead(n_gpus: int, *, gpus_per_instance: int = 8, interruptions_per_month: "float | Estimate | None" = None,
                  checkpoint_minutes: "float | Estimate | None" = None,
                  restart_minutes: "float | Estimate | None" = None) -> Estimate:
    """Extra run time on spot instances, as a fraction of the uninterrupted time.

    A job on k instances is interrupted k times as often as one instance (mean time M between
    interruptions). Checkpointing every tau = sqrt(2 * delta * M) minimises the loss (Young 1974,
    CACM 17(9), doi:10.1145/361147.361115; delta the checkpoint time): it costs delta/tau for the
    checkpoints, tau/(2M) for the work redone after an interruption and R/M for restarts.
    """
    check_positive("n_gpus", n_gpus, integer=True)
    check_positive("gpus_per_instance", gpus_per_instance, integer=True)
    instances = -(-n_gpus // gpus_per_instance)
    rate = _given(interruptions_per_month, "spot_interruptions_per_month", "interruptions_per_month")
    delta = _given(checkpoint_minutes, "checkpoint_minutes", "checkpoint_minutes")
    restart = _given(restart_minutes, "restart_minutes", "restart_minutes")

    def overhead(r: float, d: float, rr: float) -> float:
        per_minute = r * instances / (HOURS_PER_MONTH * 60)  # interruptions of the job per minute, 1/M
        return sqrt(2 * d * per_minute) + rr * per_minute  # delta/tau + tau/(2M) at the optimal tau, + R/M

    return Estimate(overhead(rate.low, delta.low, restart.low), overhead(rate.expected, delta.expected, restart.expected),
                    overhead(rate.high, delta.high, restart.high))


@dataclass(frozen=True)
class Ownership:
    """Buying GPUs, in US dollars over the years owned: bought up front, the servers (``capex``)
    and their share of a scale-out network and of shared storage; paid while owned, the energy
    they draw, the colocation of their power (space, power delivery, cooling) and the staff who run
    them. ``gpu_hours_used`` is the GPU-hours actually worked."""

    capex: float
    energy: Estimate
    gpu_hours_used: float
    network: Estimate = Estimate.exact(0.0)
    storage: Estimate = Estimate.exact(0.0)
    facility: Estimate = Estimate.exact(0.0)
    staff: Estimate = Estimate.exact(0.0)

    def parts(self) -> dict[str, Estimate]:
        """Each cost by name, bought up front first."""
        return {"servers": Estimate.exact(self.capex), "network": self.network, "storage": self.storage,
                "energy": self.energy, "facility": self.facility, "staff": self.staff}

    @property
    def upfront(self) -> Estimate:
        return self.capex + self.network + self.storage

    @property
    def running(self) -> Estimate:
        """Energy, facility and staff over the whole period."""
        return self.energy + self.facility + self.staff

    @property
    def total(self) -> Estimate:
        return self.upfront + self.running

    @property
    def per_gpu_hour(self) -> Estimate:
        return self.total * (1 / self.gpu_hours_used)


def ownership(gpu: "GPU | str", n_gpus: int, *, years: float = 3.0, utilization: float = 0.7,
              gpu_price_usd: float | None = None, electricity_usd_per_kwh: "float | Estimate | None" = None,
              pue: "float | Estimate | None" = None, colocation_usd_per_kw_month: "float | Estimate | None" = None,
              staff_usd_per_gpu_year: "float | Estimate | None" = None,
              network_share: "float | Estimate | None" = None,
              storage_share: "float | Estimate | None" = None) -> Ownership:
    """Buy ``n_gpus`` GPUs in servers and run them for ``years`` at ``utilization``.

    Servers: the GPU price over the GPUs' share of a server's price. Network: a share of that
    price for the switches, optics and cables between servers, none when the GPUs fit one server
    (:func:`steptime.network_for`). Storage: a share of it. Energy: the GPUs' TDP times the
    server-to-GPU power ratio, times PUE, over the hours in use. Facility: colocation of that server
    power, billed per provisioned kW every month whether used or not. Staff: per GPU and year.
    Each defaults to its sourced range in ``data/cost_assumptions.csv``; pass 0 for what a reader
    already has (their own building, their own team).
    """
    g = gpus.get(gpu)
    check_positive("n_gpus", n_gpus, integer=True)
    check_range("years", years, 0, MAX_YEARS, low_open=True)
    check_range("utilization", utilization, 0, 1, low_open=True)
    unit = gpu_price_usd if gpu_price_usd is not None else price(g, "purchase")
    if unit is None:
        raise ValueError(f"no dated purchase price for {g.name}; pass gpu_price_usd")
    check_positive("gpu_price_usd", unit)
    capex = check_result(n_gpus * unit / assumption("gpu_share_of_server").expected, n_gpus=n_gpus, gpu_price_usd=unit)
    hours = years * HOURS_PER_YEAR * utilization
    kw = n_gpus * g.tdp_watts / 1000 * assumption("server_power_per_gpu_tdp").expected
    tariff = _given(electricity_usd_per_kwh, "electricity_usd_per_kwh", "electricity_usd_per_kwh")
    p = _given(pue, "pue", "pue")
    energy = Estimate(kw * hours * tariff.low * p.low, kw * hours * tariff.expected * p.expected,
                      kw * hours * tariff.high * p.high)
    one_server = n_gpus <= steptime.network_for(g).gpus_per_server
    network = Estimate.exact(0.0) if one_server else \
        capex * _given(network_share, "network_share_of_capex", "network_share")
    return Ownership(capex=capex, energy=energy, gpu_hours_used=n_gpus * hours, network=network,
                     storage=capex * _given(storage_share, "storage_share_of_capex", "storage_share"),
                     facility=kw * years * 12 * _given(colocation_usd_per_kw_month, "colocation_usd_per_kw_month",
                                                       "colocation_usd_per_kw_month"),
                     staff=n_gpus * years * _given(staff_usd_per_gpu_year, "staff_usd_per_gpu_year",
                                                   "staff_usd_per_gpu_year"))


def hourly_rate(gpu: "GPU | str", pricing: str = "on_demand", *, price_per_gpu_hour: float | None = None,
                discount: "float | Estimate | None" = None, **ownership_kwargs) -> Estimate:
    """US dollars per GPU-hour under ``pricing``: the on-demand price (median of the data, or yours)
    less the 1- or 3-year commitment or spot discount band (sourced in ``cost_assumptions.csv``,
    or yours), or the ownership cost per GPU-hour used."""
    if pricing not in PRICING:
        raise ValueError(f"pricing={pricing!r} is not supported; choose one of {', '.join(PRICING)}")
    if discount is not None and pricing in ("on_demand", "owned"):
        raise ValueError(f"discount applies to reserved_1y, reserved_3y and spot pricing, not pricing={pricing!r}")
    if pricing == "owned":
        return ownership(gpu, 1, **ownership_kwargs).per_gpu_hour
    base = price_per_gpu_hour if price_per_gpu_hour is not None else price(gpu, "cloud_hour")
    if base is None:
        raise ValueError(f"no dated on-demand price for {gpus.get(gpu).name}; pass price_per_gpu_hour")
    check_positive("price_per_gpu_hour", base)
    if pricing == "on_demand":
        return Estimate.exact(base)
    cut = _given(discount, f"{pricing}_discount", "discount")
    return cut.map(lambda d: base * (1 - d))


def training_cost(model: "Model | str | float", tokens: float, gpu: "GPU | str", n_gpus: int, *,
                  pricing: str = "on_demand", dtype: str | None = None, seq_len: int | None = None,
                  price_per_gpu_hour: float | None = None, discount: "float | Estimate | None" = None,
                  **ownership_kwargs) -> Estimate:
    """US dollars for a training run: GPU-hours (:func:`compute.training_time`, with its MFU and
    goodput bands; spot adds :func:`spot_overhead`) times the hourly rate under ``pricing``."""
    time = compute.training_time(model, tokens, gpu, n_gpus, dtype=dtype, seq_len=seq_len)
    if pricing == "spot":
        extra = spot_overhead(n_gpus)
        time = Estimate(time.low * (1 + extra.low), time.expected * (1 + extra.expected), time.high * (1 + extra.high))
    rate = hourly_rate(gpu, pricing, price_per_gpu_hour=price_per_gpu_hour, discount=discount, **ownership_kwargs)
    gpu_hours = time.map(lambda t: t * n_gpus / HOUR)
    return Estimate(gpu_hours.low * rate.low, gpu_hours.expected * rate.expected, gpu_hours.high * rate.high)


@renamed_keywords(n_gpus="tp")
def serving_cost_per_million_tokens(model: "Model | str | float", gpu: "GPU | str", *, tp: int = 1,
                                    batch_size: int = 1, context_len: int = 2048, weight_dtype: str = "bf16",
                                    pricing: str = "on_demand", price_per_gpu_hour: float | None = None) -> Estimate:
    """US dollars per million generated tokens at steady decoding (:func:`compute.decode_throughput`)."""
    kv = memory.serving_kv_dtype(weight_dtype)
    tps = compute.decode_throughput(model, gpu, tp=tp, batch_size=batch_size, context_len=context_len,
                                    weight_dtype=weight_dtype, kv_dtype=kv)
    rate = hourly_rate(gpu, pricing, price_per_gpu_hour=price_per_gpu_hour)
    per_token = Estimate(rate.low * tp / (tps.high * HOUR), rate.expected * tp / (tps.expected * HOUR),
                         rate.high * tp / (tps.low * HOUR))
    return per_token * 1e6


#: Utilisations a serving cost curve is drawn at.
UTILIZATIONS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class CostPoint:
    """One replica at one utilisation: the requests/s that load it so, US dollars per million input
    and output tokens, the time per output token and to the first token (seconds, M/D/1), and
    whether its batch fits in memory."""

    utilization: float
    requests_per_s: float
    usd_per_million_tokens: float
    time_per_token: float
    time_to_first_token: float
    fits: bool


@dataclass(frozen=True)
class CostCurve:
    """:class:`CostPoint` by utilisation, as :func:`serving_costs` computes them."""

    points: tuple[CostPoint, ...]

    def to_frame(self) -> pd.DataFrame:
        """Columns utilization, requests/s, usd per million tokens, ms per token, first token (ms), fits."""
        return pd.DataFrame([{"utilization": p.utilization, "requests/s": p.requests_per_s,
                              "usd per million tokens": p.usd_per_million_tokens,
                              "ms per token": p.time_per_token * 1000, "first token (ms)": p.time_to_first_token * 1000,
                              "fits": p.fits} for p in self.points])


@renamed_keywords(n_gpus="tp")
def serving_costs(model: "Model | str | float", gpu: "GPU | str", *, tp: int = 1, prompt_len: int = 1024,
                  output_len: int = 256, weight_dtype: str = "bf16", pricing: str = "on_demand",
                  price_per_gpu_hour: float | None = None, utilizations: tuple[float, ...] = UTILIZATIONS) -> CostCurve:
    """US dollars per million input and output tokens of one replica (``tp`` of tensor
    parallelism) as its utilisation falls: the rate is paid whether or not requests come, so the
    price per token grows as 1 / utilisation (:mod:`traffic`: utilisation = requests/s x GPU-seconds
    per request). With each point the requests/s, time per token and time to first token (M/D/1)."""
    r = traffic.replica(model, gpu, tp=tp, prompt_len=prompt_len, output_len=output_len, weight_dtype=weight_dtype)
    rate = hourly_rate(gpu, pricing, price_per_gpu_hour=price_per_gpu_hour).expected * tp
    points = []
    for i, u in enumerate(utilizations):
        check_range(f"utilizations[{i}]", u, 0, 1, low_open=True, high_open=True)
        at = traffic.load(r, u / r.work_per_request)
        points.append(CostPoint(utilization=u, requests_per_s=at.requests_per_s,
                                usd_per_million_tokens=rate / (at.requests_per_s * (prompt_len + output_len) * HOUR) * 1e6,
                                time_per_token=at.time_per_token, time_to_first_token=at.time_to_first_token,
                                fits=at.fits))
    return CostCurve(tuple(points))


@renamed_keywords(n_gpus="tp")
def serving_cost_curve(model: "Model | str | float", gpu: "GPU | str", **kwargs) -> pd.DataFrame:
    """:func:`serving_costs` as a table (:meth:`CostCurve.to_frame`)."""
    return serving_costs(model, gpu, **kwargs).to_frame()


def break_even_utilization(curve: "CostCurve | pd.DataFrame", api_usd_per_million: float) -> float | None:
    """Utilisation from which one's own replica costs less per token than an API charging
    ``api_usd_per_million`` (input and output alike), from :func:`serving_costs` (or its
    :func:`serving_cost_curve` table); None if it never does on the curve. Cost is exactly inverse
    in utilisation, so the point is solved for."""
    check_positive("api_usd_per_million", api_usd_per_million)
    if isinstance(curve, CostCurve) and curve.points:
        first, highest = curve.points[0], max(p.utilization for p in curve.points)
        u = first.utilization * first.usd_per_million_tokens / api_usd_per_million
    elif isinstance(curve, pd.DataFrame) and {"utilization", "usd per million tokens"} <= set(curve) and len(curve):
        first, highest = curve.iloc[0], curve["utilization"].max()
        u = first["utilization"] * first["usd per million tokens"] / api_usd_per_million
    else:
        raise ValueError("curve must be a curve from cost.serving_costs or a table from cost.serving_cost_curve")
    return u if u <= highest else None


@dataclass(frozen=True)
class RentOrBuy:
    """Cumulative US dollars at the start of each month (0, 1, ..., the horizon) of renting on
    demand (``rent``) and of owning (``own``: the upfront costs, then the running costs month by
    month)."""

    rent: tuple[float, ...]
    own: tuple[float, ...]

    @property
    def months(self) -> range:
        return range(len(self.rent))

    @property
    def break_even_month(self) -> int | None:
        """The first month by which owning has cost no more than renting, or None."""
        return next((m for m, r, o in zip(self.months, self.rent, self.own) if o <= r), None)

    def to_frame(self) -> pd.DataFrame:
        """Columns month, rent (USD), own (USD)."""
        return pd.DataFrame({"month": list(self.months), "rent (USD)": list(self.rent), "own (USD)": list(self.own)})


def rent_or_buy(gpu: "GPU | str", n_gpus: int, *, years: float = 3.0, utilization: float = 0.7,
                price_per_gpu_hour: float | None = None, gpu_price_usd: float | None = None,
                **ownership_costs: "float | Estimate | None") -> RentOrBuy:
    """Cumulative cost by month of renting on demand and of owning (servers, network and storage
    up front, then energy, facility and staff each month), at the expected values; keywords of
    :func:`ownership` set its other costs."""
    own = ownership(gpu, n_gpus, years=years, utilization=utilization, gpu_price_usd=gpu_price_usd, **ownership_costs)
    rate = hourly_rate(gpu, price_per_gpu_hour=price_per_gpu_hour).expected  # on demand
    months = range(int(years * 12) + 1)
    used = n_gpus * HOURS_PER_MONTH * utilization
    per_month = own.running.expected / (years * 12)
    check_result(months[-1] * used * rate, price_per_gpu_hour=price_per_gpu_hour, n_gpus=n_gpus, years=years)
    check_result(own.upfront.expected + months[-1] * per_month, gpu_price_usd=gpu_price_usd, n_gpus=n_gpus, years=years)
    return RentOrBuy(rent=tuple(m * used * rate for m in months), own=tuple(own.upfront.expected + m * per_month
                                                                             for m in months))


def rent_vs_buy(gpu: "GPU | str", n_gpus: int, **kwargs) -> pd.DataFrame:
    """:func:`rent_or_buy` as a table (:meth:`RentOrBuy.to_frame`): month, rent (USD), own (USD)."""
    return rent_or_buy(gpu, n_gpus, **kwargs).to_frame()


def break_even_months(table: "RentOrBuy | pd.DataFrame") -> float | None:
    """First month of a :func:`rent_or_buy` result (or its :func:`rent_vs_buy` table) by which owning
    has cost no more than renting, or None."""
    if isinstance(table, RentOrBuy):
        month = table.break_even_month
        return None if month is None else float(month)
    check_instance("table", table, pd.DataFrame, "a rent_or_buy result or a rent_vs_buy table")
    if not {"month", "rent (USD)", "own (USD)"} <= set(table.columns):
        raise ValueError(f"table must be a rent_vs_buy table (month, rent (USD), own (USD)), got columns {list(table.columns)}")
    cheaper = table[table["own (USD)"] <= table["rent (USD)"]]
    return None if cheaper.empty else float(cheaper["month"].iloc[0])
