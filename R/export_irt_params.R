#!/usr/bin/env Rscript
# Export a LEVANTE IRT ModelRecord (.rds) to CSV with base R only (no rlevante, no mirt).
#
# Usage: Rscript R/export_irt_params.R <model.rds> <out_dir>
# Writes <out_dir>/model_vals.csv (mirt mod2values layout: group, item, class, name, value, ...),
#        <out_dir>/scores.csv (run_id, ability, se; calibration EAP) and
#        <out_dir>/record.csv (slot, value: model_class, itemtype, invariance, group_names, items, runs;
#        runs = run_id of each calibration data row, which scores are matched to by run id).
# readRDS() loads the S4 object without its class definition; slots are read with methods::slot(),
# falling back to attr() (S4 slots are stored as attributes). A record without model_vals is an error.

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) {
  stop("usage: Rscript export_irt_params.R <model.rds> <out_dir>", call. = FALSE)
}
rds_path <- args[[1]]
out_dir <- args[[2]]

record <- tryCatch(readRDS(rds_path), error = function(e) {
  stop(sprintf("%s: not a readable .rds file (%s)", basename(rds_path), conditionMessage(e)), call. = FALSE)
})

get_slot <- function(x, name) {
  value <- tryCatch(methods::slot(x, name), error = function(e) NULL)
  if (is.null(value)) value <- attr(x, name, exact = TRUE)
  if (is.null(value) && is.list(x) && !is.data.frame(x)) value <- x[[name]]
  value
}

model_vals <- if (is.data.frame(record)) record else get_slot(record, "model_vals")
if (is.null(model_vals) || !is.data.frame(model_vals)) {
  stop(sprintf("%s: no model_vals slot (not a LEVANTE ModelRecord)", basename(rds_path)), call. = FALSE)
}

dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)
write_full <- function(df, file) {
  # Doubles as %.17g (they round-trip exactly); only text columns are quoted.
  df <- as.data.frame(df, stringsAsFactors = FALSE)
  numeric <- vapply(df, is.double, logical(1))
  for (col in names(df)[numeric]) {
    df[[col]] <- ifelse(is.na(df[[col]]), NA, sprintf("%.17g", df[[col]]))
  }
  text <- which(!numeric & !vapply(df, is.logical, logical(1)))
  utils::write.csv(df, file.path(out_dir, file), row.names = FALSE, na = "NA", quote = text)
}
write_full(model_vals, "model_vals.csv")

scores <- if (is.data.frame(record)) NULL else get_slot(record, "scores")
if (!is.null(scores) && all(c("run_id", "ability", "se") %in% names(scores))) {
  write_full(data.frame(run_id = as.character(scores$run_id), ability = scores$ability, se = scores$se,
                        stringsAsFactors = FALSE), "scores.csv")
}

meta_slots <- c("model_class", "itemtype", "invariance", "group_names", "items", "runs")
meta <- do.call(rbind, lapply(meta_slots, function(name) {
  value <- if (is.data.frame(record)) NULL else get_slot(record, name)
  if (is.null(value) || length(value) == 0) return(NULL)
  data.frame(slot = name, index = seq_along(value), value = as.character(value), stringsAsFactors = FALSE)
}))
if (!is.null(meta)) utils::write.csv(meta, file.path(out_dir, "record.csv"), row.names = FALSE)
cat(sprintf("exported %s: %d model_vals rows\n", basename(rds_path), nrow(model_vals)))
