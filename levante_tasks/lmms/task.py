"""The lmms-eval face of the LEVANTE tasks: the task class that loads prepared data, and the scoring hooks.

lmms-eval 0.7.2 resolves relative `data_files` against the working directory, so the YAMLs name no files:
their `class:` is `LevanteTask`, whose `download` reads `<data_dir>/<version>/datasets/<task>/` at run time
(`docs.task_docs`). The variant is the YAML's `metadata.levante` mapping (`task`, `seed`, `variant`, and `locale`
for a translated locale: `schema.locales`). Simple
and chat models get the same task (`model_bridge.BothKindsTask`). The doc hooks the YAMLs name (prompt, pictures,
target) are `levante_tasks.core.hooks`, shared with the inspect tasks; the scoring hooks here build lmms-eval's
metrics from core's records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from levante_tasks import __version__
from levante_tasks.core import docs, hooks, parsing, records
from levante_tasks.core.locale_text import item_locale
from levante_tasks.errors import LevanteError
from levante_tasks.lmms import metrics
from levante_tasks.lmms.model_bridge import BothKindsTask, NotInRelease, RunStopped, generated_text
from levante_tasks.lmms.patcher import installed_lmms_eval
from levante_tasks.schema import locales
from levante_tasks.schema.locales import ENGLISH, Locale
from levante_tasks.schema.task_source import task_source_sha256
from levante_tasks.schema.tasks import task_info


class LevanteTask(BothKindsTask):
    """A LEVANTE task variant built from prepared data, for simple and chat models alike."""

    def download(self, dataset_kwargs: dict | None = None) -> None:
        """Load the docs of the YAML's variant (no retries, no HF cache); missing data stops the run in one line, and
        a task the data version does not hold is left out of a group run (NotInRelease)."""
        spec = (self.config.metadata or {}).get("levante") or {}
        try:
            locale = locales.locale(spec.get("locale"))
            task_docs = docs.task_docs(spec["task"], seed=int(spec.get("seed", 0)),
                                       variant=spec.get("variant", "original"),
                                       choice_only=self.config.output_type == "multiple_choice", locale=locale)
            version = task_docs[0]["data_version"]
            spec["provenance"] = run_provenance(self.config.task, spec["task"], version, locale)
        except docs.TaskNotHeld as exc:
            raise NotInRelease(f"{self.config.task}: {exc}") from None
        except LevanteError as exc:
            raise RunStopped(f"{self.config.task}: {exc}") from None
        self.use_docs(task_docs)

    def doc_to_visual(self, doc: dict) -> Any:
        """The doc's images; a missing or damaged image (met inside the model's loop) stops the run in one line."""
        try:
            return super().doc_to_visual(doc)
        except LevanteError as exc:
            hint = docs.repair_hint(doc.get("data_version", "VERSION"))
            raise RunStopped(f"{self.config.task}: {exc}: {hint}") from None


def run_provenance(lmms_task: str, task: str, version: str, locale: Locale = ENGLISH) -> dict[str, Any]:
    """What lmms-eval's results file records under `configs[task].metadata.levante.provenance` (docs/summary.md):
    the task version (the catalogue's, also the YAML's `metadata.version`), the dataset (of the variant's locale),
    the task source hash, this package and the lmms-eval it runs on (`summarize`/`verify` read it)."""
    return {
        "task_version": task_info(task).version,
        "data_version": version,
        "dataset_fingerprint": docs.dataset_fingerprint(task, version, locale),
        "synthetic_data": docs.dataset_synthetic(task, version, locale),
        "task_source_sha256": task_source_sha256(lmms_task),
        "levante_tasks_version": __version__,
        "lmms_eval": installed_lmms_eval(),
    }


def process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """generate_until: parse the answer (letter in the doc's locale, scores JSON, or slider number) and build the item
    record."""
    text = generated_text(results[0])
    if doc["response_format"] == "slider":
        position, method = parsing.parse_number(text)
        return metrics.item_metrics(records.slider_record(doc, position, method))
    options = hooks.option_texts(doc)
    parsed = parsing.parse_choice(text, doc["letters"], options, item_locale(doc))
    return metrics.item_metrics(records.choice_record(doc, parsed, option_texts=options))


def process_results_mc(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """multiple_choice: the option with the lowest loss is the choice; scores stored as -loss."""
    return metrics.item_metrics(records.loss_record(doc, [records.option_loss(r) for r in results]))
