// holdfast dashboard: refreshes the #live region of a page in place, opens
// the leader's page from a standby once the leader answers, and shows an
// HA event's details when its band, dot or row is clicked. No framework,
// no build step; the same script serves the standalone timeline files
// (which have no #live region and do not refresh).
(function () {
  'use strict';

  var live = document.getElementById('live');
  var badge = document.getElementById('live-state');
  var panel = document.getElementById('details');
  var selected = null;

  // An event is its time, process and kind (the same on its row, band and dot).
  function same(el) {
    return selected && el.getAttribute('data-at') === selected.at &&
      el.getAttribute('data-process') === selected.process &&
      el.getAttribute('data-kind') === selected.kind;
  }

  function clear() {
    var marked = document.querySelectorAll('.selected');
    for (var i = 0; i < marked.length; i++) marked[i].classList.remove('selected');
  }

  function line(tag, text, cls) {
    var el = document.createElement(tag);
    el.textContent = text;
    if (cls) el.className = cls;
    panel.appendChild(el);
  }

  function opened() {
    panel.textContent = '';
    var close = document.createElement('button');
    close.type = 'button';
    close.className = 'close';
    close.textContent = '×';
    close.title = 'Close';
    panel.appendChild(close);
  }

  // Fills the panel from the events table's row of the selected event, or
  // (an event before the window) from the picture's own tooltip.
  function show() {
    if (!panel) return;
    clear();
    if (!selected) { panel.hidden = true; return; }
    // A report of several timelines: look only in the clicked one's.
    var scope = (selected.scope && document.contains(selected.scope)) ? selected.scope : document;
    var row = null;
    var rows = scope.querySelectorAll('tr.event');
    for (var i = 0; i < rows.length; i++) if (same(rows[i])) { row = rows[i]; break; }
    var drawn = scope.querySelectorAll('svg [data-at]');
    var tip = null;
    for (var j = 0; j < drawn.length; j++) {
      if (same(drawn[j])) {
        drawn[j].classList.add('selected');
        if (!tip) tip = drawn[j].querySelector('title');
      }
    }
    opened();
    if (row) {
      row.classList.add('selected');
      var cells = row.cells;
      line('h3', cells[2].textContent);
      line('p', cells[1].textContent + ' · ' + cells[0].textContent + ' UTC', 'muted');
      var details = cells[3].querySelectorAll('div');
      for (var k = 0; k < details.length; k++) line('p', details[k].textContent);
      var log = cells[4].textContent;
      if (log) {
        line('p', 'Log line to look for:', 'muted');
        line('code', log, 'log');
      }
    } else if (tip) {
      var lines = tip.textContent.split('\n');
      line('h3', lines[0]);
      for (var m = 1; m < lines.length; m++) {
        if (lines[m].indexOf('log: ') === 0) {
          line('p', 'Log line to look for:', 'muted');
          line('code', lines[m].slice(5), 'log');
        } else {
          line('p', lines[m]);
        }
      }
    } else {
      panel.hidden = true;
      return;
    }
    panel.hidden = false;
  }

  function pick(target) {
    if (target.closest('#details .close')) { selected = null; show(); return false; }
    var el = target.closest('[data-at][data-process]');
    if (!el) return false;
    selected = {
      at: el.getAttribute('data-at'),
      process: el.getAttribute('data-process'),
      kind: el.getAttribute('data-kind'),
      scope: el.closest('section.timeline-section')
    };
    show();
    return true;
  }

  document.addEventListener('click', function (e) { pick(e.target); });
  document.addEventListener('keydown', function (e) {
    if ((e.key === 'Enter' || e.key === ' ') && pick(e.target)) e.preventDefault();
    if (e.key === 'Escape') { selected = null; show(); }
  });

  if (!live) return;
  var every = parseInt(live.getAttribute('data-refresh-ms'), 10) || 2000;
  var refreshes = 0;

  function state(text, ok) {
    if (!badge) return;
    badge.textContent = text;
    badge.className = ok ? 'ok' : 'bad';
  }

  // A standby's page for the leader's content: open the leader's page
  // once the leader answers (right after a crash, the leader known may
  // still be the dead one; then this page keeps refreshing instead).
  function follow() {
    var note = live.querySelector('[data-follow]');
    if (!note) return;
    fetch(note.getAttribute('data-leader') + '/overview', { mode: 'no-cors', cache: 'no-store' })
      .then(function () { location.href = note.getAttribute('data-follow'); })
      .catch(function () { state('leader not answering yet, retrying', false); });
  }

  function refresh() {
    // Not while the pointer rests on a picture (its tooltip would vanish)
    // or an event has the keyboard's focus.
    var focused = document.activeElement;
    if (live.querySelector('.timeline-picture:hover, svg.graph:hover') ||
        (focused && focused !== document.body && live.contains(focused) && focused.hasAttribute('data-at'))) {
      setTimeout(refresh, every);
      return;
    }
    fetch(location.pathname + location.search, {
      headers: { 'X-Holdfast-Partial': '1' },
      cache: 'no-store'
    }).then(function (response) {
      if (!response.ok) throw new Error('HTTP ' + response.status);
      return response.text();
    }).then(function (html) {
      live.innerHTML = html;
      refreshes += 1;
      live.setAttribute('data-refreshes', String(refreshes));
      show();
      state('live', true);
      follow();
      setTimeout(refresh, every);
    }).catch(function () {
      state('JobManager not reachable, retrying', false);
      setTimeout(refresh, every);
    });
  }

  follow();
  setTimeout(refresh, every);
})();
