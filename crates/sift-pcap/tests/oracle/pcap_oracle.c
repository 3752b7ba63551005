/*
 * Test oracle for sift-pcap: reads capture files with the installed libpcap
 * and prints what libpcap delivers, in the text form the Rust tests print
 * for sift-pcap (see tests/common/mod.rs, describe()).
 *
 *   pcap_oracle [-n] FILE...
 *
 * -n opens files with nanosecond precision (default: microseconds).
 * For each file: "FILE", then "OPENERR <msg>" or
 * "OPEN dlt=D snap=S swapped=W ver=A.B", "HDR lt=L snap=S" (the link type
 * and snapshot length pcap_dump writes) or "HDR none", one
 * "P caplen len tv_sec tv_usec hexdata" line per packet, then "END" or
 * "ERR <msg>".
 */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

static void dump_header(pcap_t *p)
{
	FILE *tmp = tmpfile();
	pcap_dumper_t *d;
	unsigned char hdr[24];
	uint32_t lt, snap;

	if (tmp == NULL) {
		printf("HDR none\n");
		return;
	}
	d = pcap_dump_fopen(p, tmp);
	if (d == NULL) {
		fclose(tmp);
		printf("HDR none\n");
		return;
	}
	pcap_dump_flush(d);
	rewind(tmp);
	if (fread(hdr, 1, sizeof hdr, tmp) != sizeof hdr) {
		printf("HDR none\n");
	} else {
		memcpy(&snap, hdr + 16, 4);
		memcpy(&lt, hdr + 20, 4);
		printf("HDR lt=%u snap=%u\n", lt, snap);
	}
	pcap_dump_close(d);
}

int main(int argc, char **argv)
{
	int nano = 0;
	int i = 1;
	char errbuf[PCAP_ERRBUF_SIZE];

	if (i < argc && strcmp(argv[i], "-n") == 0) {
		nano = 1;
		i++;
	}
	for (; i < argc; i++) {
		pcap_t *p;
		struct pcap_pkthdr *h;
		const u_char *data;
		int r;

		printf("FILE\n");
		p = pcap_open_offline_with_tstamp_precision(argv[i],
		    nano ? PCAP_TSTAMP_PRECISION_NANO : PCAP_TSTAMP_PRECISION_MICRO,
		    errbuf);
		if (p == NULL) {
			printf("OPENERR %s\n", errbuf);
			continue;
		}
		printf("OPEN dlt=%d snap=%d swapped=%d ver=%d.%d\n",
		    pcap_datalink(p), pcap_snapshot(p), pcap_is_swapped(p),
		    pcap_major_version(p), pcap_minor_version(p));
		dump_header(p);
		while ((r = pcap_next_ex(p, &h, &data)) == 1) {
			bpf_u_int32 k;

			printf("P %u %u %ld %ld ", h->caplen, h->len,
			    (long)h->ts.tv_sec, (long)h->ts.tv_usec);
			for (k = 0; k < h->caplen; k++)
				printf("%02x", data[k]);
			printf("\n");
		}
		if (r == -1)
			printf("ERR %s\n", pcap_geterr(p));
		else
			printf("END\n");
		pcap_close(p);
	}
	return 0;
}
