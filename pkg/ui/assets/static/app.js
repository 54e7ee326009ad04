// quotagate ui: the server renders every view; this script keeps the one on screen
// live. It opens one Server-Sent Events stream for the view (its path and query) and
// puts each pushed rendering into <main>. No framework, no build, nothing fetched from
// elsewhere.
(function () {
  "use strict";
  var main = document.getElementById("view");
  var live = document.getElementById("live");
  var select = document.querySelector("select[data-autosubmit]");
  if (select) {
    select.addEventListener("change", function () { select.form.submit(); });
  }
  if (!main || !window.EventSource) {
    return;
  }
  // clock writes d as the page writes every time (the server's clockLayout):
  // 2026-12-05 15:04:05, 24-hour, whatever the browser's locale.
  function clock(d) {
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + " " +
      two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds());
  }
  function say(text) {
    if (live) { live.textContent = text; }
  }
  // focusKey names the focused element inside <main>, to focus its like again after
  // the view is replaced (keyboard users keep their place).
  function focusKey() {
    var el = document.activeElement;
    if (!el || !main.contains(el) || el === main) { return null; }
    if (el.id) { return "#" + CSS.escape(el.id); }
    var href = el.getAttribute("href");
    if (href) { return el.tagName.toLowerCase() + '[href="' + CSS.escape(href) + '"]'; }
    return null;
  }
  var view = location.pathname + location.search;
  var source = new EventSource("/events?view=" + encodeURIComponent(view));
  source.addEventListener("view", function (e) {
    var key = focusKey();
    main.innerHTML = e.data;
    main.dataset.version = e.lastEventId;
    if (key) {
      var again = main.querySelector(key);
      if (again) { again.focus(); }
    }
    say("Live: updated " + clock(new Date()));
  });
  source.addEventListener("open", function () { say("Live: connected"); });
  source.addEventListener("error", function () {
    say("Disconnected from kubectl quotagate ui: reconnecting (is it still running?)");
  });
})();
