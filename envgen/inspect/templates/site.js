/* envwright inspect: filtering and sorting of the site's tables, in the page, with no server.
 *
 * A table marked data-filterable is driven by the controls whose data-for names its id:
 *   data-filter="search"            the row's data-search contains every word typed;
 *   data-filter="ATTR"              the row's data-ATTR equals the chosen value
 *                                   (data-match="word": contains it as a word; "min": is at least it).
 * Headers with data-sort sort the rows ("num" by a cell's data-value or number, "text" by its text).
 * "N of M shown" goes into the element whose data-count-for names the table. A table with data-page="P"
 * shows at most P matching rows (rows past P are also hidden in the HTML, so thousands of rows paint
 * fast); the button whose data-more-for names the table shows them all.
 *
 * Sortable headers get a button (reachable with Tab, Enter/Space sorts) and aria-sort. "Show all" and the
 * sort are kept in history.state, and everything is re-applied on pageshow: after Back the browser restores
 * the filters' values (after this script first ran, firing no event), and the table matches them again.
 */
(function () {
  "use strict";

  function rowsOf(table) { return Array.prototype.slice.call(table.tBodies[0].rows); }

  function matches(row, controls) {
    for (var i = 0; i < controls.length; i++) {
      var c = controls[i], kind = c.getAttribute("data-filter"), how = c.getAttribute("data-match");
      /* a chosen value is compared as it is (options carry value="…", exactly the row's data-*: whitespace
         and all); only what is typed (search, a number) is trimmed */
      var typed = kind === "search" || how === "min";
      var want = (typed ? c.value.trim() : c.value).toLowerCase();
      if (want === "") continue;
      if (kind === "search") {
        var hay = row.getAttribute("data-search") || row.textContent.toLowerCase();
        var words = want.split(/\s+/);
        for (var w = 0; w < words.length; w++) { if (hay.indexOf(words[w]) < 0) return false; }
        continue;
      }
      var have = (row.getAttribute("data-" + kind) || "").toLowerCase();
      if (how === "word") {
        if ((" " + have + " ").indexOf(" " + want + " ") < 0) return false;
      } else if (how === "min") {
        if (have === "" || parseFloat(have) < parseFloat(want)) return false;
      } else if (have !== want) {
        return false;
      }
    }
    return true;
  }

  function apply(table) {
    var controls = document.querySelectorAll('[data-filter][data-for="' + table.id + '"]');
    var page = table.getAttribute("data-page");
    var limit = page && table.getAttribute("data-all") !== "yes" ? parseInt(page, 10) : Infinity;
    var rows = rowsOf(table), matched = 0, shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var ok = matches(rows[i], controls);
      if (ok) matched++;
      var show = ok && shown < limit;
      rows[i].hidden = !show;
      if (show) shown++;
    }
    var count = document.querySelector('[data-count-for="' + table.id + '"]');
    if (count) {
      count.textContent = (matched === rows.length ? rows.length + " of " + rows.length : matched + " of " + rows.length + " match") +
        (shown < matched ? ", first " + shown + " shown" : matched === rows.length ? " shown" : ", all shown");
    }
    var more = document.querySelector('[data-more-for="' + table.id + '"]');
    if (more) { more.hidden = shown >= matched; more.textContent = "show all " + matched; }
    var empty = document.querySelector('[data-empty-for="' + table.id + '"]');
    if (empty) empty.hidden = matched !== 0;
  }

  function cellKey(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) return numeric ? -Infinity : "";
    if (numeric) {
      var v = cell.getAttribute("data-value");
      var n = parseFloat(v !== null ? v : cell.textContent);
      return isNaN(n) ? -Infinity : n;
    }
    return cell.textContent.trim().toLowerCase();
  }

  /* what survives Back (history.state is kept with the history entry; DOM attributes are not) */
  function remembered(table) {
    var state = history.state && history.state.inspect;
    return (state && state[table.id]) || {};
  }

  function copy(o) {
    var out = {};
    if (o && typeof o === "object") { for (var k in o) { if (Object.prototype.hasOwnProperty.call(o, k)) out[k] = o[k]; } }
    return out;
  }

  function remember(table, key, value) {
    try {
      var state = copy(history.state), mine = copy(state.inspect), entry = copy(mine[table.id]);
      entry[key] = value;
      mine[table.id] = entry;
      state.inspect = mine;
      history.replaceState(state, "");
    } catch (err) { /* a browser that refuses replaceState here only forgets this after Back */ }
  }

  function sortBy(table, th, ascending) {
    var index = th.cellIndex, numeric = th.getAttribute("data-sort") === "num";
    if (ascending === undefined) ascending = th.getAttribute("aria-sort") !== "ascending";
    var heads = th.parentNode.cells;
    for (var i = 0; i < heads.length; i++) heads[i].removeAttribute("aria-sort");
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var rows = rowsOf(table).map(function (r, i) { return [cellKey(r, index, numeric), i, r]; });
    rows.sort(function (a, b) {
      if (a[0] < b[0]) return ascending ? -1 : 1;
      if (a[0] > b[0]) return ascending ? 1 : -1;
      return a[1] - b[1];
    });
    var body = table.tBodies[0], frag = document.createDocumentFragment();
    rows.forEach(function (r) { frag.appendChild(r[2]); });
    body.appendChild(frag);
    remember(table, "sort", [index, ascending]);
  }

  function sortable(th) {
    /* a real button in the header: focusable, and Enter or Space presses it (a click the th handles) */
    var button = document.createElement("button");
    button.type = "button";
    while (th.firstChild) button.appendChild(th.firstChild);
    th.appendChild(button);
  }

  function restore(table) {
    var state = remembered(table);
    if (state.all) table.setAttribute("data-all", "yes");
    if (state.sort && !table.hasAttribute("data-sorted")) {
      var th = table.tHead && table.tHead.rows[0] && table.tHead.rows[0].cells[state.sort[0]];
      if (th && th.hasAttribute("data-sort")) sortBy(table, th, !!state.sort[1]);
    }
    table.setAttribute("data-sorted", "yes");
    apply(table);
  }

  function init() {
    var tables = document.querySelectorAll("table[data-filterable]");
    Array.prototype.forEach.call(tables, function (table) {
      var controls = document.querySelectorAll('[data-filter][data-for="' + table.id + '"]');
      var timer = null;
      Array.prototype.forEach.call(controls, function (c) {
        c.addEventListener("input", function () {
          clearTimeout(timer);
          timer = setTimeout(function () { apply(table); }, 60);
        });
        c.addEventListener("change", function () { apply(table); });
      });
      Array.prototype.forEach.call(table.querySelectorAll("th[data-sort]"), function (th) {
        sortable(th);
        th.addEventListener("click", function () { sortBy(table, th); apply(table); });
      });
      var more = document.querySelector('[data-more-for="' + table.id + '"]');
      if (more) {
        more.addEventListener("click", function () {
          table.setAttribute("data-all", "yes");
          remember(table, "all", true);
          apply(table);
        });
      }
      restore(table);
    });
  }

  function reapply() {
    /* pageshow comes after the browser restored the controls' values (and on a return from the bfcache) */
    Array.prototype.forEach.call(document.querySelectorAll("table[data-filterable]"), restore);
  }

  function focusExcerpts() {
    /* a source excerpt opens at the class or function the environment was modelled on */
    Array.prototype.forEach.call(document.querySelectorAll("pre.code"), function (pre) {
      var mark = pre.querySelector("mark.focus");
      if (!mark) return;
      var top = mark.offsetParent === pre ? mark.offsetTop : mark.offsetTop - pre.offsetTop;
      pre.scrollTop = Math.max(0, top - 24);
    });
  }

  function start() { init(); focusExcerpts(); }

  window.addEventListener("pageshow", reapply);

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
