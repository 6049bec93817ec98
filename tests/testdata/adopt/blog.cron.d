# /etc/cron.d/blog: system crontab, with a user field
SHELL=/bin/bash
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
MAILTO=root

*/5 * * * *  www-data  cd /srv/blog && php artisan schedule:run >> /dev/null 2>&1
0 1 * * *    root      /usr/local/sbin/backup-db --all && /usr/local/sbin/prune-backups
30 2 * * 6   root      [ -x /usr/sbin/fstrim ] && /usr/sbin/fstrim --all
0 * * * *    root	cron-gate rotate -- /usr/sbin/logrotate /etc/logrotate.conf
