#!/usr/bin/env Rscript
# Base-R reference of the model-child comparisons 2 (accuracy vs difficulty) and 3 (response distributions,
# KL) from exported CSVs; used to check the Python implementation (tests/test_r_parity.py) to 1e-8.
#
# Usage: Rscript R/compare_levante.R --model-vals model_vals.csv --scores scores.csv --trials trials.csv \
#          --records records.csv --task TASK --out DIR [--min-n 10] [--group NAME]
# Inputs: model_vals.csv / scores.csv from R/export_irt_params.R; trials in the Redivis layout;
#         records.csv = model records (model, task, item_uid, correct, option_scores as "[s0, s1, ...]"
#         or "s0;s1;..." in canonical order, higher = preferred).
# Conventions: b = -d / a1 (higher = harder); a child-aligned model has NEGATIVE r(correct, b).
#   KL(human || model) = sum_k p_k log(p_k / q_k) (natural log), p_k = 0 terms are 0, q_k == 0 -> 1e-5,
#   q = softmax(beta * scores); beta minimises the mean KL over all (item, bin) pairs in [0.025, 40]:
#   201-point log grid, then optimize() on log(beta) between the best point's neighbours (tol 1e-10).
#   Bins: floor(theta) of the calibration score; (item, bin) cells need n >= min-n children.
# Outputs (DIR): difficulty.csv, human_distributions.csv, kl_items.csv, kl_summary.csv.

parse_args <- function(args) {
  opts <- list(min_n = 10, group = NA_character_)
  i <- 1
  while (i <= length(args)) {
    key <- gsub("-", "_", sub("^--", "", args[[i]]))
    opts[[key]] <- args[[i + 1]]
    i <- i + 2
  }
  for (need in c("model_vals", "scores", "trials", "records", "task", "out")) {
    if (is.null(opts[[need]])) stop(sprintf("missing --%s", gsub("_", "-", need)), call. = FALSE)
  }
  opts$min_n <- as.integer(opts$min_n)
  opts
}

opts <- parse_args(commandArgs(trailingOnly = TRUE))
EPS <- 1e-5
BOUNDS <- c(0.025, 40)

# --- IRT items (reference group) --------------------------------------------------------------------------
mv <- utils::read.csv(opts$model_vals, stringsAsFactors = FALSE)
group <- if (is.na(opts$group)) unique(mv$group)[1] else opts$group
item_rows <- mv[mv$group == group & mv$item != "GROUP", ]
if (nrow(item_rows) == 0) stop(sprintf("no item rows for group %s", group), call. = FALSE)
item_names <- unique(item_rows$item)
param <- function(name) {
  vals <- item_rows[item_rows$name == name, ]
  vals$value[match(item_names, vals$item)]
}
items <- data.frame(irt_item = item_names, a1 = param("a1"), d = param("d"), stringsAsFactors = FALSE)
items$item_uid <- sub("-[0-9]+$", "", items$irt_item)
items$instance <- suppressWarnings(as.integer(sub("^.*-([0-9]+)$", "\\1", items$irt_item)))
items$instance[is.na(items$instance) | !grepl("-[0-9]+$", items$irt_item)] <- 1L
items <- items[order(items$item_uid, items$instance), ]
items <- items[!duplicated(items$item_uid), ]
items$b <- -items$d / items$a1

# --- Model records ----------------------------------------------------------------------------------------
records <- utils::read.csv(opts$records, stringsAsFactors = FALSE, colClasses = c(item_uid = "character"))
records <- records[records$task == opts$task & !is.na(records$correct), ]
records <- records[!duplicated(records[, c("model", "item_uid")]), ]
parse_scores <- function(text) {
  if (is.na(text) || !nzchar(trimws(text))) return(NULL)
  parts <- strsplit(gsub("[][ ]", "", text), "[,;]")[[1]]
  as.numeric(parts)
}
fmt <- function(df) {
  for (col in names(df)) if (is.double(df[[col]])) df[[col]] <- sprintf("%.17g", df[[col]])
  df
}
dir.create(opts$out, showWarnings = FALSE, recursive = TRUE)
write_out <- function(df, name) utils::write.csv(fmt(df), file.path(opts$out, name), row.names = FALSE)

# --- Comparison 2: accuracy vs difficulty ---------------------------------------------------------------
difficulty <- do.call(rbind, lapply(sort(unique(records$model)), function(m) {
  rec <- records[records$model == m & records$item_uid %in% items$item_uid, ]
  b <- items$b[match(rec$item_uid, items$item_uid)]
  x <- as.numeric(rec$correct)
  ok <- length(x) >= 10 && stats::sd(x) > 0
  data.frame(model = m, n_items = length(x), accuracy = mean(x),
             pearson_r = if (ok) stats::cor(x, b) else NaN,
             spearman_rho = if (ok) stats::cor(x, b, method = "spearman") else NaN, stringsAsFactors = FALSE)
}))
write_out(difficulty, "difficulty.csv")

# --- Comparison 3: children's distributions per (item, ability bin) ------------------------------------
parse_distractors <- function(text) {
  text <- trimws(text)
  if (is.na(text) || text %in% c("", "NA")) return(character(0))
  if (startsWith(text, "{")) {
    hits <- regmatches(text, gregexpr("['\"][^'\"]*['\"]\\s*:\\s*['\"][^'\"]*['\"]", text))[[1]]
    keys <- sub("^['\"]([^'\"]*)['\"].*$", "\\1", hits)
    vals <- trimws(sub("^.*:\\s*['\"]([^'\"]*)['\"]$", "\\1", hits))
    num <- suppressWarnings(as.numeric(keys))
    return(vals[order(is.na(num), num, keys)])
  }
  trimws(strsplit(text, ",", fixed = TRUE)[[1]])
}
trials <- utils::read.csv(opts$trials, stringsAsFactors = FALSE,
                          colClasses = c(run_id = "character", item_uid = "character", response = "character",
                                         answer = "character", distractors = "character"))
trials <- trials[trials$item_uid %in% items$item_uid, ]
options_of <- lapply(seq_len(nrow(trials)), function(i) c(trials$answer[i], parse_distractors(trials$distractors[i])))
trials$n_options <- vapply(options_of, length, integer(1))
trials$option_index <- vapply(seq_len(nrow(trials)), function(i) {
  hit <- match(trials$response[i], options_of[[i]])
  if (is.na(hit)) -1L else hit - 1L
}, integer(1))
scores <- utils::read.csv(opts$scores, stringsAsFactors = FALSE, colClasses = c(run_id = "character"))
trials$theta <- scores$ability[match(trials$run_id, scores$run_id)]
trials <- trials[trials$option_index >= 0 & !is.na(trials$theta), ]
trials$bin_low <- as.integer(floor(trials$theta))
n_opt <- tapply(trials$n_options, trials$item_uid, function(x) as.integer(names(which.max(table(x)))))
cells <- split(trials, list(trials$item_uid, trials$bin_low), drop = TRUE)
dist <- do.call(rbind, lapply(cells, function(cell) {
  if (nrow(cell) < opts$min_n) return(NULL)
  uid <- cell$item_uid[1]
  k <- n_opt[[uid]]
  counts <- vapply(0:(k - 1), function(j) sum(cell$option_index == j), numeric(1))
  data.frame(item_uid = uid, bin_low = cell$bin_low[1], option_index = 0:(k - 1), n = counts,
             n_bin = nrow(cell), p = counts / nrow(cell), stringsAsFactors = FALSE)
}))
dist <- dist[order(dist$item_uid, dist$bin_low, dist$option_index), ]
write_out(dist, "human_distributions.csv")

# --- KL(human || model) with a fitted beta --------------------------------------------------------------
kl_row <- function(p, q) {
  q[q == 0] <- EPS
  sum(ifelse(p > 0, p * log(p / q), 0))
}
softmax <- function(s, beta) {
  z <- beta * s
  z <- z - max(z)
  exp(z) / sum(exp(z))
}
pairs_all <- unique(dist[, c("item_uid", "bin_low")])
kl_items <- list()
kl_summary <- list()
for (m in sort(unique(records$model))) {
  rec <- records[records$model == m, ]
  sc <- lapply(rec$option_scores, parse_scores)
  names(sc) <- rec$item_uid
  usable <- vapply(pairs_all$item_uid, function(uid) {
    s <- sc[[uid]]
    !is.null(s) && length(s) == n_opt[[uid]] && !anyNA(s)
  }, logical(1))
  pairs <- pairs_all[usable, ]
  if (nrow(pairs) == 0) next
  p_list <- lapply(seq_len(nrow(pairs)), function(i) {
    dist$p[dist$item_uid == pairs$item_uid[i] & dist$bin_low == pairs$bin_low[i]]
  })
  s_list <- lapply(pairs$item_uid, function(uid) sc[[uid]])
  kls <- function(beta) mapply(function(p, s) kl_row(p, softmax(s, beta)), p_list, s_list)
  mean_kl <- function(beta) mean(kls(beta))
  grid <- exp(seq(log(BOUNDS[1]), log(BOUNDS[2]), length.out = 201))
  values <- vapply(grid, mean_kl, numeric(1))
  best <- which.min(values)
  lo <- log(grid[max(best - 1, 1)])
  hi <- log(grid[min(best + 1, length(grid))])
  fit <- stats::optimize(function(x) mean_kl(exp(x)), c(lo, hi), tol = 1e-10)
  beta <- if (fit$objective <= values[best]) exp(fit$minimum) else grid[best]
  pairs$kl <- kls(beta)
  pairs$model <- m
  bins <- aggregate(kl ~ bin_low, data = pairs, FUN = mean)
  closest <- bins$bin_low[order(bins$kl, bins$bin_low)][1]
  kl_items[[m]] <- pairs[order(pairs$item_uid, pairs$bin_low), c("model", "item_uid", "bin_low", "kl")]
  kl_summary[[m]] <- data.frame(model = m, beta = beta, mean_kl = mean(pairs$kl), n_pairs = nrow(pairs),
                                closest_bin = sprintf("%d_%d", closest, closest + 1L), stringsAsFactors = FALSE)
}
write_out(do.call(rbind, kl_items), "kl_items.csv")
write_out(do.call(rbind, kl_summary), "kl_summary.csv")
cat(sprintf("compared %d model(s) on %s\n", nrow(difficulty), opts$task))
