"""``htmlrag-data list`` names, for each data set, the experiments that read it: every name it gives is an
experiment that exists, and every experiment whose own dataset is in the registry is named there."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir

from htmlrag.data.download import DATASETS
from htmlrag_bench.eval.schemas import CONF_DIR, register_configs
from tests.helpers.configs import experiments

register_configs()
EXPERIMENTS = experiments()
DATASET_NAMES = set(DATASETS)


def test_every_named_experiment_exists() -> None:
    for ds in DATASETS.values():
        for name in ds.needed_by:
            if name and name not in DATASET_NAMES:  # a dataset option (dataset=wtq_html_qa) may be named too
                assert name in EXPERIMENTS, f"{ds.name}: needed_by names {name!r}, no conf/experiment/{name}.yaml"


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_an_experiment_is_listed_under_its_dataset(experiment: str) -> None:
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[f"experiment={experiment}"])
    name = str(cfg.dataset.get("name", ""))
    if name in DATASETS:
        assert experiment in DATASETS[name].needed_by, f"htmlrag-data list: {name} does not name {experiment}"
