#!/usr/bin/env Rscript
# Download LEVANTE children's data and IRT model records from Redivis for `levante-tasks compare`.
#
# Needs the `redivis` R package (remotes::install_github("redivis/redivis-r")) and Redivis credentials
# (REDIVIS_API_TOKEN or an interactive login). Not run by the tests: the comparison accepts exports made by
# this script or by hand. Pin datasets as name:hash:version (rlevante convention).
#
# Usage:
#   Rscript R/download_levante_data.R --out DIR \
#     [--org levante] [--trials-dataset levante_data_pilots:68kn:v2_0] [--trials-table trials:ztnm] \
#     [--runs-table scores:pgms] [--registry-dataset levante_metadata_scoring:e97h:v1_11] \
#     [--registry-table model_registry:rqwv] [--models trog/multigroup_site/overlap_items/trog_rasch_f1_scalar.rds,...]
# Writes DIR/trials.csv, DIR/runs.csv (run_id, user_id, site, dataset, age, language, ... where the runs table has
# them) and DIR/irt/<file_name path>.rds. `compare` reads a child's language from the trials' `language` column, else
# from runs.csv's (LEVANTE's runs -> variants `language`, e.g. de-DE, es-CO, en-US); an export with neither is
# compared with every language pooled, labelled "language not recorded" (docs/comparison.md).

parse_args <- function(args) {
  opts <- list(org = "levante", trials_dataset = "levante_data_pilots:68kn:v2_0", trials_table = "trials:ztnm",
               runs_table = "scores:pgms", registry_dataset = "levante_metadata_scoring:e97h:v1_11",
               registry_table = "model_registry:rqwv", models = "")
  i <- 1
  while (i <= length(args)) {
    opts[[gsub("-", "_", sub("^--", "", args[[i]]))]] <- args[[i + 1]]
    i <- i + 2
  }
  if (is.null(opts$out)) stop("missing --out DIR", call. = FALSE)
  opts
}

opts <- parse_args(commandArgs(trailingOnly = TRUE))
if (!requireNamespace("redivis", quietly = TRUE)) {
  stop("the 'redivis' R package is required: remotes::install_github('redivis/redivis-r')", call. = FALSE)
}
dir.create(file.path(opts$out, "irt"), showWarnings = FALSE, recursive = TRUE)
org <- redivis::redivis$organization(opts$org)

trials_ds <- org$dataset(opts$trials_dataset)
trials <- as.data.frame(trials_ds$table(opts$trials_table)$to_tibble())
runs <- as.data.frame(trials_ds$table(opts$runs_table)$to_tibble())
keep <- intersect(c("run_id", "user_id", "site", "dataset", "age", "task_id", "language"), names(runs))
runs <- unique(runs[, keep, drop = FALSE])
utils::write.csv(trials, file.path(opts$out, "trials.csv"), row.names = FALSE)
utils::write.csv(runs, file.path(opts$out, "runs.csv"), row.names = FALSE)
cat(sprintf("trials: %d rows; runs: %d rows\n", nrow(trials), nrow(runs)))

registry <- as.data.frame(org$dataset(opts$registry_dataset)$table(opts$registry_table)$to_tibble())
wanted <- if (nzchar(opts$models)) strsplit(opts$models, ",", fixed = TRUE)[[1]] else registry$file_name
missing <- setdiff(wanted, registry$file_name)
if (length(missing)) stop(sprintf("not in the model registry: %s", paste(missing, collapse = ", ")), call. = FALSE)
for (name in wanted) {
  file_id <- registry$file[match(name, registry$file_name)]
  target <- file.path(opts$out, "irt", name)
  dir.create(dirname(target), showWarnings = FALSE, recursive = TRUE)
  redivis::file(file_id)$download(path = target, overwrite = TRUE)
  cat(sprintf("model record: %s\n", name))
}
