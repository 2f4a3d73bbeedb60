#!/usr/bin/env Rscript
# Base-R reference of the model-child comparisons 2 (accuracy vs difficulty) and 3 (response distributions,
# KL) from exported CSVs; used to check the Python implementation (tests/test_r_parity.py) to 1e-8.
#
# Usage: Rscript R/compare_levante.R --model-vals model_vals.csv --scores scores.csv --trials trials.csv \
#          --records records.csv --task TASK --items items.csv --out DIR [--min-n 10]
# Inputs: model_vals.csv / scores.csv from R/export_irt_params.R; trials in the Redivis layout;
#         records.csv = model records (model, task, item_uid, correct, option_scores as "[s0, s1, ...]"
#         or "s0;s1;..." in canonical order, higher = preferred); items.csv = canonical options per item
#         (item_uid + options as a JSON list of strings, or a manifest's answer + response_alternatives).
# Conventions: b = -d / a1 (higher = harder); a child-aligned model has NEGATIVE r(correct, b).
#   Reference group: the one group whose MEAN_1 is fixed (est FALSE); ambiguous flags are an error.
#   Canonical options: [answer] + distractors as listed, from --items only (required: the trials' own order need
#   not be the models'); items with two options of one loose key are dropped. A response is mapped to an option
#   by its text (exact, else case/space-insensitive with image paths reduced to their stem), never by its
#   position in the trial's list; trials whose answer is not option 0, or listing another option set, are
#   dropped.
#   KL(human || model) = sum_k p_k log(p_k / q_k) (natural log), p_k = 0 terms are 0, q_k == 0 -> 1e-5,
#   q = softmax(beta * scores). Cells (item, bin) are weighted by their children's count n; beta minimises the
#   weighted mean KL in [0.025, 40]: 201-point log grid, then optimize() on log(beta) between the best point's
#   neighbours (tol 1e-10); mean_kl_unweighted (cells equal) is minimised on its own, beta_unweighted.
#   Baseline: a uniform model, KL = log K + sum p log p. Better-than-uniform statistic (its permutation p-value
#   is Python's only): S = sum_ik m_ik (s_ik - mean_k s_ik), m = children's counts pooled over an item's cells.
#   Bins: floor(theta) of the calibration score; (item, bin) cells need n >= min-n children.
# Outputs (DIR): difficulty.csv, human_distributions.csv, kl_items.csv, kl_summary.csv, kl_bins.csv,
#   alignment.csv (counts of unmatched responses and dropped trials).

parse_args <- function(args) {
  opts <- list(min_n = 10, items = NA_character_)
  i <- 1
  while (i <= length(args)) {
    key <- gsub("-", "_", sub("^--", "", args[[i]]))
    opts[[key]] <- args[[i + 1]]
    i <- i + 2
  }
  for (need in c("model_vals", "scores", "trials", "records", "task", "items", "out")) {
    if (is.null(opts[[need]])) stop(sprintf("missing --%s", gsub("_", "-", need)), call. = FALSE)
  }
  opts$min_n <- as.integer(opts$min_n)
  opts
}

opts <- parse_args(commandArgs(trailingOnly = TRUE))
EPS <- 1e-5
BOUNDS <- c(0.025, 40)
IMAGE_SUFFIX <- "\\.(webp|png|jpg|jpeg|gif|svg|bmp)$"

# --- IRT items (reference group from the est flags) ------------------------------------------------------
mv <- utils::read.csv(opts$model_vals, stringsAsFactors = FALSE)
groups <- unique(mv$group)
if (length(groups) == 1) {
  group <- groups[1]
} else {
  if (!"est" %in% names(mv)) stop("several groups and no est column: reference group unknown", call. = FALSE)
  means <- mv[mv$item == "GROUP" & mv$name == "MEAN_1", ]
  fixed <- means$group[!as.logical(means$est)]
  if (length(fixed) != 1) stop("est flags do not name exactly one reference group", call. = FALSE)
  group <- fixed
}
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

# --- Canonical options and the children's responses mapped by text ------------------------------------
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
  parts <- trimws(strsplit(text, ",", fixed = TRUE)[[1]])
  parts[nzchar(parts)]
}
parse_json_strings <- function(text) {
  hits <- regmatches(text, gregexpr('"((\\\\.|[^"\\\\])*)"', text))[[1]]
  trimws(gsub('\\\\(.)', "\\1", substr(hits, 2, nchar(hits) - 1)))
}
loose_key <- function(x) {
  x <- tolower(gsub("\\s+", " ", trimws(x)))
  image <- grepl(IMAGE_SUFFIX, x)
  x[image] <- sub(IMAGE_SUFFIX, "", basename(gsub("\\\\", "/", x[image])))
  x
}
trials <- utils::read.csv(opts$trials, stringsAsFactors = FALSE,
                          colClasses = c(run_id = "character", item_uid = "character", response = "character",
                                         answer = "character", distractors = "character"))
trials <- trials[trials$item_uid %in% items$item_uid, ]
listed <- lapply(seq_len(nrow(trials)), function(i) {
  c(trimws(trials$answer[i]), parse_distractors(trials$distractors[i]))
})
canonical <- list()
it <- utils::read.csv(opts$items, stringsAsFactors = FALSE, colClasses = "character")
for (i in seq_len(nrow(it))) {
  opt <- if ("options" %in% names(it)) parse_json_strings(it$options[i]) else
    c(trimws(it$answer[i]), parse_distractors(it$response_alternatives[i]))
  uid <- it$item_uid[i]
  if (length(opt) < 2) next
  if (!is.null(canonical[[uid]]) && !identical(canonical[[uid]], opt)) canonical[[uid]] <- character(0) else
    canonical[[uid]] <- opt
}
canonical <- canonical[vapply(canonical, function(o) length(o) >= 2 && !anyDuplicated(loose_key(o)), logical(1))]
option_index <- function(uid, response) {
  opts_i <- canonical[[uid]]
  if (is.na(response)) return(-1L)
  hit <- match(trimws(response), opts_i)
  if (!is.na(hit)) return(hit - 1L)
  keys <- loose_key(opts_i)
  unique_keys <- keys[!(duplicated(keys) | duplicated(keys, fromLast = TRUE))]
  hit <- match(loose_key(response), keys)
  if (!is.na(hit) && keys[hit] %in% unique_keys) hit - 1L else -1L
}
has_options <- trials$item_uid %in% names(canonical)
trials <- trials[has_options, ]
listed <- listed[has_options]
answer_differs <- mapply(function(uid, answer) option_index(uid, answer) != 0L, trials$item_uid, trials$answer,
                         USE.NAMES = FALSE)
set_differs <- vapply(seq_len(nrow(trials)), function(i) {
  if (answer_differs[i] || length(listed[[i]]) < 2) return(FALSE)
  !setequal(loose_key(listed[[i]]), loose_key(canonical[[trials$item_uid[i]]]))
}, logical(1))
trials <- trials[!set_differs & !answer_differs, ]
trials$n_options <- vapply(trials$item_uid, function(u) length(canonical[[u]]), integer(1))
trials$option_index <- mapply(option_index, trials$item_uid, trials$response, USE.NAMES = FALSE)
write_out(data.frame(trials_answer_not_canonical_answer = sum(answer_differs),
                     trials_option_set_differs = sum(set_differs),
                     trials_response_unmatched = sum(trials$option_index < 0)), "alignment.csv")

scores <- utils::read.csv(opts$scores, stringsAsFactors = FALSE, colClasses = c(run_id = "character"))
trials$theta <- scores$ability[match(trials$run_id, scores$run_id)]
trials <- trials[trials$option_index >= 0 & !is.na(trials$theta), ]
trials$bin_low <- as.integer(floor(trials$theta))
cells <- split(trials, list(trials$item_uid, trials$bin_low), drop = TRUE)
dist <- do.call(rbind, lapply(cells, function(cell) {
  if (nrow(cell) < opts$min_n) return(NULL)
  uid <- cell$item_uid[1]
  k <- length(canonical[[uid]])
  counts <- vapply(0:(k - 1), function(j) sum(cell$option_index == j), numeric(1))
  data.frame(item_uid = uid, bin_low = cell$bin_low[1], option_index = 0:(k - 1), option = canonical[[uid]],
             n = counts, n_bin = nrow(cell), p = counts / nrow(cell), stringsAsFactors = FALSE)
}))
dist <- dist[order(dist$item_uid, dist$bin_low, dist$option_index), ]
write_out(dist, "human_distributions.csv")

# --- KL(human || model) with a fitted beta, count-weighted cells, uniform baseline ---------------------
kl_row <- function(p, q) {
  q[q == 0] <- EPS
  sum(ifelse(p > 0, p * (log(p) - log(q)), 0))  # log(p / q) would overflow for a subnormal q
}
softmax <- function(s, beta) {
  z <- beta * s
  z <- z - max(z)
  exp(z) / sum(exp(z))
}
finite_softmax <- function(s) all(vapply(BOUNDS, function(b) all(is.finite(softmax(s, b))), logical(1)))
pairs_all <- unique(dist[, c("item_uid", "bin_low", "n_bin")])
kl_items <- list()
kl_summary <- list()
kl_bins <- list()
for (m in sort(unique(records$model))) {
  rec <- records[records$model == m, ]
  sc <- lapply(rec$option_scores, parse_scores)
  names(sc) <- rec$item_uid
  usable <- vapply(pairs_all$item_uid, function(uid) {
    s <- sc[[uid]]
    !is.null(s) && length(s) == length(canonical[[uid]]) && !anyNA(s) && finite_softmax(s)
  }, logical(1))
  pairs <- pairs_all[usable, ]
  if (nrow(pairs) == 0) next
  p_list <- lapply(seq_len(nrow(pairs)), function(i) {
    dist$p[dist$item_uid == pairs$item_uid[i] & dist$bin_low == pairs$bin_low[i]]
  })
  s_list <- lapply(pairs$item_uid, function(uid) sc[[uid]])
  w <- pairs$n_bin / sum(pairs$n_bin)
  kls <- function(beta) mapply(function(p, s) kl_row(p, softmax(s, beta)), p_list, s_list)
  fit_beta <- function(weights) {
    mean_kl <- function(beta) sum(weights * kls(beta))
    grid <- exp(seq(log(BOUNDS[1]), log(BOUNDS[2]), length.out = 201))
    values <- vapply(grid, mean_kl, numeric(1))
    best <- which.min(values)
    lo <- log(grid[max(best - 1, 1)])
    hi <- log(grid[min(best + 1, length(grid))])
    fit <- stats::optimize(function(x) mean_kl(exp(x)), c(lo, hi), tol = 1e-10)
    if (fit$objective <= values[best]) exp(fit$minimum) else grid[best]
  }
  beta <- fit_beta(w)
  beta_unweighted <- fit_beta(rep(1 / nrow(pairs), nrow(pairs)))
  kl_unweighted <- kls(beta_unweighted)
  statistic <- sum(mapply(function(p, s, n) sum(n * p * (s - mean(s))), p_list, s_list, pairs$n_bin))
  pairs$kl <- kls(beta)
  pairs$kl_uniform <- mapply(function(p) kl_row(p, rep(1 / length(p), length(p))), p_list)
  pairs$model <- m
  bin_of <- split(seq_len(nrow(pairs)), pairs$bin_low)
  bins <- do.call(rbind, lapply(bin_of, function(ix) {
    data.frame(bin_low = pairs$bin_low[ix[1]], n_items = length(ix), n_responses = sum(pairs$n_bin[ix]),
               mean_kl = sum(pairs$kl[ix] * pairs$n_bin[ix]) / sum(pairs$n_bin[ix]),
               mean_kl_unweighted = mean(kl_unweighted[ix]),
               uniform_kl = sum(pairs$kl_uniform[ix] * pairs$n_bin[ix]) / sum(pairs$n_bin[ix]))
  }))
  closest <- bins[order(bins$mean_kl, bins$bin_low), ][1, ]
  kl_items[[m]] <- pairs[order(pairs$item_uid, pairs$bin_low), c("model", "item_uid", "bin_low", "kl", "kl_uniform")]
  kl_bins[[m]] <- cbind(model = m, bins, stringsAsFactors = FALSE)
  uniform_mean <- sum(w * pairs$kl_uniform)
  kl_summary[[m]] <- data.frame(model = m, beta = beta, mean_kl = sum(w * pairs$kl),
                                beta_unweighted = beta_unweighted, mean_kl_unweighted = mean(kl_unweighted),
                                uniform_mean_kl = uniform_mean, uniform_test_statistic = statistic,
                                kl_ratio_to_uniform = sum(w * pairs$kl) / uniform_mean, n_pairs = nrow(pairs),
                                closest_bin = sprintf("%d_%d", closest$bin_low, closest$bin_low + 1L),
                                closest_bin_mean_kl = closest$mean_kl, closest_bin_uniform_kl = closest$uniform_kl,
                                stringsAsFactors = FALSE)
}
write_out(do.call(rbind, kl_items), "kl_items.csv")
write_out(do.call(rbind, kl_bins), "kl_bins.csv")
write_out(do.call(rbind, kl_summary), "kl_summary.csv")
cat(sprintf("compared %d model(s) on %s (reference group %s)\n", nrow(difficulty), opts$task, group))
